// The activity API of the CUPTI model: kinds, external correlation and the records. Rules cite
// <cupti_activity.h> of CUDA 13, CUPTI's API reference
// (https://docs.nvidia.com/cupti/api/group__CUPTI__ACTIVITY__API.html).
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "buffers.h"
#include "internal.h"

namespace fobcupti {
namespace {

std::array<std::atomic<bool>, CUPTI_ACTIVITY_KIND_COUNT> enabled{};

bool is_enabled(CUpti_ActivityKind kind) {
  return enabled[kind].load();
}

// The kinds the model records. Others are valid kinds it cannot produce:
// "CUPTI_ERROR_NOT_COMPATIBLE if the activity kind cannot be enabled" (cuptiActivityEnable).
bool modelled(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMSET:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return true;
    default:
      return false;
  }
}

bool valid_kind(CUpti_ActivityKind kind) {
  return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

bool valid_external(CUpti_ExternalCorrelationKind kind) {
  return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID &&
         kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
}

// "Push an external correlation id for the calling thread": one stack per kind and thread.
using Stacks = std::array<std::vector<uint64_t>, CUPTI_EXTERNAL_CORRELATION_KIND_SIZE>;
Stacks& stacks() {
  thread_local Stacks per_thread;
  return per_thread;
}

// A kernel's name must outlive its record ("shared across all activity records representing the
// same kernel"): kept for the life of the process.
const char* interned(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string>* names = new std::set<std::string>();
  std::lock_guard lock(mutex);
  return names->insert(name).first->c_str();
}

uint8_t memory_kind(const void* p) {
  switch (fobmodel::memory_of(p)) {
    case fobmodel::Memory::device:
      return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case fobmodel::Memory::pinned_host:
      return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    default:
      return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  }
}

// What a copy or memset writes, and where from: its footprint's write and read ranges.
struct Extent {
  uint64_t bytes = 0;
  const void* src = nullptr;
  const void* dst = nullptr;
};
Extent extent(const fobmodel::Op& op) {
  Extent e;
  for (const fobmodel::Footprint& f : op.footprint) {
    if (f.write) {
      e.bytes += f.width * f.rows;
      if (!e.dst) e.dst = f.base;
    } else if (!e.src) {
      e.src = f.base;
    }
  }
  return e;
}

uint8_t copy_kind(uint8_t src, uint8_t dst) {
  const bool from_device = src == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  const bool to_device = dst == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  if (from_device && to_device) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  if (from_device) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  if (to_device) return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

template <typename Record>
void write_one(const Record& record) {
  const Bytes bytes{&record, sizeof(record)};
  Buffers::instance().write(std::span<const Bytes>(&bytes, 1));
}

// The fields every work record shares, whatever its struct.
template <typename Record>
void fill_common(Record& r, const fobmodel::Op& op, uint32_t stream_id, uint64_t node,
                 uint64_t start_ns, uint64_t end_ns) {
  r.start = start_ns;
  r.end = end_ns;
  r.contextId = 1;
  r.streamId = stream_id;
  r.correlationId = op.correlation;
  r.graphNodeId = node;
}

void write_kernel(const fobmodel::Op& op, CUpti_ActivityKind kind, uint32_t stream_id,
                  uint64_t node, uint64_t start_ns, uint64_t end_ns) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = kind;
  fill_common(k, op, stream_id, node, start_ns, end_ns);
  k.completed = end_ns;
  k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
  k.name = interned(op.name);
  write_one(k);
}

void write_copy(const fobmodel::Op& op, uint32_t stream_id, uint64_t node, uint64_t start_ns,
                uint64_t end_ns) {
  const Extent e = extent(op);
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  fill_common(m, op, stream_id, node, start_ns, end_ns);
  m.srcKind = memory_kind(e.src);
  m.dstKind = memory_kind(e.dst);
  m.copyKind = copy_kind(m.srcKind, m.dstKind);
  m.bytes = e.bytes;
  m.copyCount = 1;
  write_one(m);
}

void write_memset(const fobmodel::Op& op, uint32_t stream_id, uint64_t node, uint64_t start_ns,
                  uint64_t end_ns) {
  const Extent e = extent(op);
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  fill_common(m, op, stream_id, node, start_ns, end_ns);
  m.bytes = e.bytes;
  m.memoryKind = memory_kind(e.dst);
  write_one(m);
}

}  // namespace

// "When a CUPTI activity API record is created while within an external API region and
// CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION is enabled, the activity API record will be preceded
// by a CUpti_ActivityExternalCorrelation record for each CUpti_ExternalCorrelationKind"
// (cuptiActivityPushExternalCorrelationId). No API record (RUNTIME or DRIVER not enabled for the
// call's domain), no external correlation record.
void on_api(fobmodel::Domain domain, uint32_t cbid, const char*, uint32_t correlation,
            uint64_t start_ns, uint64_t end_ns) {
  const CUpti_ActivityKind kind = domain == fobmodel::Domain::runtime ? CUPTI_ACTIVITY_KIND_RUNTIME
                                                                      : CUPTI_ACTIVITY_KIND_DRIVER;
  if (!is_enabled(kind)) return;
  std::vector<CUpti_ActivityExternalCorrelation> externals;
  if (is_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
    const Stacks& pushed = stacks();
    for (size_t k = 0; k < pushed.size(); ++k) {
      if (pushed[k].empty()) continue;
      CUpti_ActivityExternalCorrelation e;
      std::memset(&e, 0, sizeof(e));
      e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
      e.externalKind = static_cast<CUpti_ExternalCorrelationKind>(k);
      e.externalId = pushed[k].back();
      e.correlationId = correlation;
      externals.push_back(e);
    }
  }
  CUpti_ActivityAPI api;
  std::memset(&api, 0, sizeof(api));
  api.kind = kind;
  api.cbid = cbid;
  api.start = start_ns;
  api.end = end_ns;
  api.processId = static_cast<uint32_t>(getpid());
  api.threadId = static_cast<uint32_t>(syscall(SYS_gettid));
  api.correlationId = correlation;
  std::vector<Bytes> records;
  for (const auto& e : externals) records.push_back({&e, sizeof(e)});
  records.push_back({&api, sizeof(api)});
  Buffers::instance().write(records);
}

void on_activity(const fobmodel::Op& op, uint32_t stream_id, uint64_t graph_node, uint64_t start_ns,
                 uint64_t end_ns) {
  const uint64_t node = graph_node ? graph_node_id(graph_node) : 0;
  switch (op.activity) {
    case fobmodel::Activity::kernel:
      // CONCURRENT_KERNEL and KERNEL write the same record; the first is asked for first.
      if (is_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
        write_kernel(op, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, stream_id, node, start_ns, end_ns);
      } else if (is_enabled(CUPTI_ACTIVITY_KIND_KERNEL)) {
        write_kernel(op, CUPTI_ACTIVITY_KIND_KERNEL, stream_id, node, start_ns, end_ns);
      }
      break;
    case fobmodel::Activity::memcpy:
      if (is_enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) {
        write_copy(op, stream_id, node, start_ns, end_ns);
      }
      break;
    case fobmodel::Activity::memset:
      if (is_enabled(CUPTI_ACTIVITY_KIND_MEMSET)) {
        write_memset(op, stream_id, node, start_ns, end_ns);
      }
      break;
    case fobmodel::Activity::none:
      break;
  }
}

}  // namespace fobcupti

extern "C" {

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (!fobcupti::valid_kind(kind)) return CUPTI_ERROR_INVALID_KIND;
  if (!fobcupti::modelled(kind)) return CUPTI_ERROR_NOT_COMPATIBLE;
  fobcupti::enabled[kind] = true;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (!fobcupti::valid_kind(kind)) return CUPTI_ERROR_INVALID_KIND;
  fobcupti::enabled[kind] = false;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  return fobcupti::Buffers::instance().register_callbacks(request, complete);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  return fobcupti::Buffers::instance().flush_all(flag);
}

// "CUPTI_ERROR_INVALID_PARAMETER if dropped is NULL"; "The dropped count maintained for the queue
// is reset to zero when this function is called." The model has one (global) queue.
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = fobcupti::Buffers::instance().take_dropped();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                   uint64_t id) {
  if (!fobcupti::valid_external(kind)) return CUPTI_ERROR_INVALID_PARAMETER;
  fobcupti::stacks()[kind].push_back(id);
  return CUPTI_SUCCESS;
}

// "CUPTI_ERROR_QUEUE_EMPTY No external id is currently associated with kind"; lastId "can be
// NULL".
CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                  uint64_t* last) {
  if (!fobcupti::valid_external(kind)) return CUPTI_ERROR_INVALID_PARAMETER;
  auto& stack = fobcupti::stacks()[kind];
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last) *last = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

}  // extern "C"
