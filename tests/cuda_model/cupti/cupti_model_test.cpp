// The CUPTI model against the test stand-in core (fake_core.h): external correlation only in
// front of API activity records, buffers completed on CUPTI's thread, dropped counts that reset,
// record layouts and graph node callbacks.
#include <cupti.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_core.h"

namespace {

// What the client callbacks saw: every record's bytes, in order, and the completing threads.
struct Seen {
  std::mutex mutex;
  std::vector<std::vector<uint8_t>> records;
  std::vector<std::thread::id> threads;
  std::atomic<size_t> buffer_bytes{1 << 16};
  std::atomic<bool> decline{false};
};
Seen seen;

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = seen.buffer_bytes;
  *buffer = seen.decline ? nullptr : static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid) {
  std::lock_guard lock(seen.mutex);
  seen.threads.push_back(std::this_thread::get_id());
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(record);
    const size_t room = static_cast<size_t>(buffer + size - bytes);
    seen.records.emplace_back(bytes, bytes + std::min(room, sizeof(CUpti_ActivityKernel10)));
  }
  std::free(buffer);
}

template <typename T>
const T& as(const std::vector<uint8_t>& bytes) {
  return *reinterpret_cast<const T*>(bytes.data());
}
CUpti_ActivityKind kind_of(const std::vector<uint8_t>& bytes) {
  return as<CUpti_Activity>(bytes).kind;
}

const CUpti_ActivityKind kAll[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                   CUPTI_ACTIVITY_KIND_MEMCPY,
                                   CUPTI_ACTIVITY_KIND_MEMSET,
                                   CUPTI_ACTIVITY_KIND_RUNTIME,
                                   CUPTI_ACTIVITY_KIND_DRIVER,
                                   CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

class CuptiModel : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuptiActivityRegisterCallbacks(requested, completed), CUPTI_SUCCESS);
    for (CUpti_ActivityKind k : kAll) cuptiActivityDisable(k);
    seen.buffer_bytes = 1 << 16;
    seen.decline = false;
    ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
    std::lock_guard lock(seen.mutex);
    seen.records.clear();
    seen.threads.clear();
  }
  void TearDown() override {
    for (CUpti_ActivityKind k : kAll) cuptiActivityDisable(k);
  }

  // One task as the cuda backend launches it: an external id pushed around a driver-API
  // launch (cuBLAS) and a runtime-API memset.
  void run_task(uint64_t id) {
    ASSERT_EQ(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id),
              CUPTI_SUCCESS);
    {
      fobmodel::ApiCall call(fobmodel::Domain::driver, 652, "cuLaunchKernelEx");
      fobmodel::Op op;
      op.name = "gemm";
      op.activity = fobmodel::Activity::kernel;
      fobmodel::enqueue(nullptr, std::move(op));
    }
    {
      fobmodel::ApiCall call(fobmodel::Domain::runtime, 1, "cudaMemsetAsync");
      fobmodel::Op op;
      op.name = "memset";
      op.activity = fobmodel::Activity::memset;
      op.footprint.push_back({&seen, 8, 1, 8, true});
      fobmodel::enqueue(nullptr, std::move(op));
    }
    uint64_t last = 0;
    ASSERT_EQ(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
              CUPTI_SUCCESS);
    EXPECT_EQ(last, id);
  }

  std::vector<std::vector<uint8_t>> flushed() {
    EXPECT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    std::lock_guard lock(seen.mutex);
    return seen.records;
  }
};

TEST_F(CuptiModel, NoApiActivityMeansNoExternalCorrelation) {
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMSET,
                               CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}) {
    ASSERT_EQ(cuptiActivityEnable(k), CUPTI_SUCCESS);
  }
  run_task(41);
  const auto records = flushed();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(kind_of(records[0]), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  EXPECT_NE(as<CUpti_ActivityKernel10>(records[0]).correlationId, 0u);
  EXPECT_STREQ(as<CUpti_ActivityKernel10>(records[0]).name, "gemm");
  EXPECT_EQ(kind_of(records[1]), CUPTI_ACTIVITY_KIND_MEMSET);
  EXPECT_EQ(as<CUpti_ActivityMemset4>(records[1]).bytes, 8u);
}

TEST_F(CuptiModel, EveryKernelOfAPushedIdIsCorrelatedWithApiActivity) {
  for (CUpti_ActivityKind k : kAll) ASSERT_EQ(cuptiActivityEnable(k), CUPTI_SUCCESS);
  run_task(42);
  const auto records = flushed();
  // kernel, external + driver API record, memset, external + runtime API record.
  ASSERT_EQ(records.size(), 6u);
  std::vector<uint32_t> work, correlated;
  for (size_t i = 0; i < records.size(); ++i) {
    const CUpti_ActivityKind kind = kind_of(records[i]);
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      work.push_back(as<CUpti_ActivityKernel10>(records[i]).correlationId);
    } else if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      work.push_back(as<CUpti_ActivityMemset4>(records[i]).correlationId);
    } else if (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto& e = as<CUpti_ActivityExternalCorrelation>(records[i]);
      EXPECT_EQ(e.externalId, 42u);
      EXPECT_EQ(e.externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
      correlated.push_back(e.correlationId);
      // In front of the API record it belongs to.
      ASSERT_LT(i + 1, records.size());
      EXPECT_EQ(as<CUpti_ActivityAPI>(records[i + 1]).correlationId, e.correlationId);
    }
  }
  EXPECT_EQ(work, correlated);
}

TEST_F(CuptiModel, DriverActivityAloneCorrelatesOnlyDriverCalls) {
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}) {
    ASSERT_EQ(cuptiActivityEnable(k), CUPTI_SUCCESS);
  }
  run_task(43);
  size_t externals = 0;
  for (const auto& r : flushed())
    externals += kind_of(r) == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  EXPECT_EQ(externals, 1u);
}

TEST_F(CuptiModel, BuffersCompleteOnCuptisThreadAndDropsResetOnRead) {
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  // Room for one kernel record per buffer: a second one needs the next buffer.
  seen.buffer_bytes = sizeof(CUpti_ActivityKernel10) + 8;
  run_task(1);
  run_task(2);
  seen.decline = true;
  run_task(3);
  run_task(4);
  EXPECT_EQ(flushed().size(), 2u);
  {
    std::lock_guard lock(seen.mutex);
    for (std::thread::id t : seen.threads) EXPECT_NE(t, std::this_thread::get_id());
  }
  size_t dropped = 0;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 2u);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
  EXPECT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
}

struct GraphSeen {
  std::vector<std::pair<CUpti_CallbackId, uint64_t>> nodes;  // cbid, node id
  std::vector<uint64_t> originals;
};

void CUPTIAPI on_resource(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  auto* out = static_cast<GraphSeen*>(userdata);
  ASSERT_EQ(domain, CUPTI_CB_DOMAIN_RESOURCE);
  const auto* graph = static_cast<const CUpti_GraphData*>(
      static_cast<const CUpti_ResourceData*>(data)->resourceDescriptor);
  uint64_t id = 0, original = 0;
  ASSERT_EQ(cuptiGetGraphNodeId(graph->node, &id), CUPTI_SUCCESS);
  out->nodes.emplace_back(cbid, id);
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    ASSERT_EQ(cuptiGetGraphNodeId(graph->originalNode, &original), CUPTI_SUCCESS);
    out->originals.push_back(original);
  }
}

TEST_F(CuptiModel, GraphNodesReachTheSubscriberAndTheRecords) {
  GraphSeen graph;
  CUpti_SubscriberHandle subscriber = nullptr, second = nullptr;
  ASSERT_EQ(cuptiSubscribe(&subscriber, on_resource, &graph), CUPTI_SUCCESS);
  EXPECT_EQ(cuptiSubscribe(&second, on_resource, &graph),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  for (CUpti_CallbackId id :
       {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}) {
    ASSERT_EQ(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, id), CUPTI_SUCCESS);
  }
  fobmodel::fake::hooks().graph_node(0x1000, 0);
  fobmodel::fake::hooks().graph_node(0x2000, 0x1000);
  ASSERT_EQ(graph.nodes.size(), 2u);
  EXPECT_EQ(graph.nodes[0].first,
            static_cast<CUpti_CallbackId>(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED));
  EXPECT_EQ(graph.originals, std::vector<uint64_t>{graph.nodes[0].second});
  // The replayed clone's kernel names the clone's id.
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  fobmodel::fake::set_graph_node(0x2000);
  run_task(5);
  fobmodel::fake::set_graph_node(0);
  const auto records = flushed();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(as<CUpti_ActivityKernel10>(records[0]).graphNodeId, graph.nodes[1].second);
  EXPECT_EQ(cuptiUnsubscribe(subscriber), CUPTI_SUCCESS);
  EXPECT_EQ(cuptiUnsubscribe(subscriber), CUPTI_ERROR_INVALID_PARAMETER);
  fobmodel::fake::hooks().graph_node(0x3000, 0);
  EXPECT_EQ(graph.nodes.size(), 2u);
}

TEST_F(CuptiModel, DocumentedErrors) {
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID), CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_COUNT), CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OVERHEAD), CUPTI_ERROR_NOT_COMPATIBLE);
  EXPECT_EQ(cuptiActivityRegisterCallbacks(nullptr, completed), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, nullptr),
            CUPTI_ERROR_QUEUE_EMPTY);
  EXPECT_EQ(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
            CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiGetGraphNodeId(nullptr, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  const char* text = nullptr;
  ASSERT_EQ(cuptiGetResultString(CUPTI_ERROR_QUEUE_EMPTY, &text), CUPTI_SUCCESS);
  EXPECT_STREQ(text, "CUPTI_ERROR_QUEUE_EMPTY");
  uint8_t buffer[8] = {};
  CUpti_Activity* record = nullptr;
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, 0, &record), CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, sizeof(buffer), &record), CUPTI_ERROR_INVALID_KIND);
}

}  // namespace
