#include "cupti_timer.h"

#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace fob {
namespace {

constexpr size_t kBufferBytes = 8 << 20;
constexpr size_t kAlign = 8;

// The CUPTI entry points used, looked up in libcupti at run time.
struct Api {
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetGraphNodeId) graph_node_id = nullptr;
};

Api g_api;
std::once_flag g_loaded;
std::string g_load_error;

// What the buffers delivered: each external id's CUPTI correlation ids, and each correlation
// id's GPU work. Joined in collect(), since the two kinds of record arrive in any order.
std::mutex g_mu;
std::unordered_map<uint32_t, uint64_t> g_external;                // correlation id -> external id
std::unordered_map<uint32_t, CuptiTimer::Span> g_by_correlation;  // correlation id -> work
// CUDA graphs: a replayed kernel's record names its graph node, not the API call that was
// captured, so each node is tagged when the capture creates it (the task being launched) and
// the tag follows the node into every clone (instantiation).
std::atomic<uint32_t> g_current_task{0};                         // task + 1 being launched
std::unordered_map<uint64_t, uint32_t> g_node_task;              // graph node id -> task + 1
std::unordered_map<uint32_t, CuptiTimer::Span> g_by_graph_task;  // task + 1 -> replayed work
CUpti_SubscriberHandle g_subscriber = nullptr;

void note_work(uint32_t correlation, uint64_t graph_node, uint64_t start, uint64_t end) {
  CuptiTimer::Span* span = nullptr;
  if (graph_node != 0) {
    auto tagged = g_node_task.find(graph_node);
    if (tagged == g_node_task.end()) return;  // a node no task created
    span = &g_by_graph_task[tagged->second];
  } else {
    span = &g_by_correlation[correlation];
  }
  CuptiTimer::Span& s = *span;
  if (start < s.start) s.start = start;
  if (end > s.end) s.end = end;
  ++s.records;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
        note_work(k->correlationId, k->graphNodeId, k->start, k->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
        note_work(m->correlationId, m->graphNodeId, m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
        note_work(m->correlationId, m->graphNodeId, m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(record);
        g_external[e->correlationId] = e->externalId;
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

void CUPTIAPI on_graph_node(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                            const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
  if (!graph) return;
  // CUPTI is asked for the node ids before g_mu is taken: CUPTI may hold its own locks while
  // its worker thread waits for g_mu in buffer_completed, and the two orders would deadlock.
  uint64_t node = 0, original = 0;
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    const uint32_t task = g_current_task.load();
    if (task == 0 || g_api.graph_node_id(graph->node, &node) != CUPTI_SUCCESS) return;
    std::lock_guard<std::mutex> lock(g_mu);
    g_node_task[node] = task;
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    if (g_api.graph_node_id(graph->originalNode, &original) != CUPTI_SUCCESS ||
        g_api.graph_node_id(graph->node, &node) != CUPTI_SUCCESS) {
      return;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    auto tagged = g_node_task.find(original);
    if (tagged != g_node_task.end()) g_node_task[node] = tagged->second;
  }
}

template <typename F>
bool find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

void load() {
  void* lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    g_load_error = std::string("libcupti cannot be loaded: ") + (why ? why : "not found");
    return;
  }
  Api a;
  const bool all = find(lib, "cuptiActivityEnable", &a.enable) &&
                   find(lib, "cuptiActivityDisable", &a.disable) &&
                   find(lib, "cuptiActivityRegisterCallbacks", &a.register_callbacks) &&
                   find(lib, "cuptiActivityFlushAll", &a.flush_all) &&
                   find(lib, "cuptiActivityGetNextRecord", &a.next_record) &&
                   find(lib, "cuptiActivityGetNumDroppedRecords", &a.dropped) &&
                   find(lib, "cuptiActivityPushExternalCorrelationId", &a.push) &&
                   find(lib, "cuptiActivityPopExternalCorrelationId", &a.pop) &&
                   find(lib, "cuptiGetResultString", &a.result_string) &&
                   find(lib, "cuptiSubscribe", &a.subscribe) &&
                   find(lib, "cuptiUnsubscribe", &a.unsubscribe) &&
                   find(lib, "cuptiEnableCallback", &a.enable_callback) &&
                   find(lib, "cuptiGetGraphNodeId", &a.graph_node_id);
  if (!all) {
    g_load_error = "libcupti lacks the activity API calls this build uses";
    return;
  }
  g_api = a;
}

std::string describe(const char* what, CUptiResult r) {
  const char* text = nullptr;
  if (g_api.result_string) g_api.result_string(r, &text);
  return std::string(what) + ": " + (text ? text : "CUPTI error " + std::to_string(r));
}

// CUPTI writes an external-correlation record only in front of an API activity record made
// while an id is pushed (cupti_activity.h, cuptiActivityPushExternalCorrelationId): without
// RUNTIME and DRIVER activity no kernel could ever be joined to its task. Both, because cuBLAS
// and NCCL launch through the driver API (cuLaunchKernel*) and the runtime's own calls
// (cudaMemsetAsync, cudaMemcpyAsync) are runtime records whose nested driver calls are not.
const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET,
                                     CUPTI_ACTIVITY_KIND_RUNTIME,
                                     CUPTI_ACTIVITY_KIND_DRIVER,
                                     CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

}  // namespace

std::unique_ptr<CuptiTimer> CuptiTimer::start(std::string* why) {
  std::call_once(g_loaded, load);
  if (!g_load_error.empty()) {
    *why = g_load_error;
    return nullptr;
  }
  CUptiResult r = g_api.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    *why = describe("cuptiActivityRegisterCallbacks", r);
    return nullptr;
  }
  r = g_api.subscribe(&g_subscriber, on_graph_node, nullptr);
  if (r == CUPTI_SUCCESS) {
    for (CUpti_CallbackId id :
         {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}) {
      if (r == CUPTI_SUCCESS)
        r = g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, id);
    }
  }
  if (r != CUPTI_SUCCESS) {
    *why = describe("subscribing to CUPTI's graph node callbacks", r);
    if (g_subscriber) g_api.unsubscribe(g_subscriber);
    g_subscriber = nullptr;
    return nullptr;
  }
  for (CUpti_ActivityKind kind : kKinds) {
    r = g_api.enable(kind);
    if (r != CUPTI_SUCCESS) {
      *why = describe("cuptiActivityEnable", r);
      for (CUpti_ActivityKind k : kKinds) g_api.disable(k);
      g_api.unsubscribe(g_subscriber);
      g_subscriber = nullptr;
      return nullptr;
    }
  }
  return std::unique_ptr<CuptiTimer>(new CuptiTimer());
}

CuptiTimer::~CuptiTimer() {
  for (CUpti_ActivityKind kind : kKinds) g_api.disable(kind);
  g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (g_subscriber) g_api.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  g_external.clear();
  g_by_correlation.clear();
  g_node_task.clear();
  g_by_graph_task.clear();
}

void CuptiTimer::push(uint64_t id) {
  g_current_task = static_cast<uint32_t>(id & 0xffffffffu);
  g_api.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiTimer::pop() {
  g_current_task = 0;
  uint64_t last = 0;
  g_api.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

std::vector<CuptiTimer::Span> CuptiTimer::collect(uint64_t first_id, size_t count,
                                                  size_t* dropped) {
  // Forced: the iteration has finished on the GPU, so every record is final; this runs after
  // the iteration, outside every timed interval.
  g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t lost = 0;
  g_api.dropped(nullptr, 0, &lost);
  std::vector<Span> spans(count);
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [correlation, id] : g_external) {
    if (id < first_id || id >= first_id + count) continue;
    auto work = g_by_correlation.find(correlation);
    if (work == g_by_correlation.end()) continue;
    Span& s = spans[id - first_id];
    if (work->second.start < s.start) s.start = work->second.start;
    if (work->second.end > s.end) s.end = work->second.end;
    s.records += work->second.records;
  }
  // A graph replay's work, by the task that created each node (ids count tasks from 1).
  for (const auto& [task, work] : g_by_graph_task) {
    if (task >= count) continue;
    Span& s = spans[task];
    if (work.start < s.start) s.start = work.start;
    if (work.end > s.end) s.end = work.end;
    s.records += work.records;
  }
  g_by_graph_task.clear();
  // The iteration is over and flushed: nothing later can join what is left (work outside any
  // task, such as filling inputs), so it goes.
  g_external.clear();
  g_by_correlation.clear();
  // CUPTI resets its count on every call: `lost` is this iteration's alone, so one dropped
  // record costs one iteration its kernel times, not the rest of the run.
  *dropped = lost;
  return spans;
}

}  // namespace fob
