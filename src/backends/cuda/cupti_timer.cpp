#include "cupti_timer.h"

#include <cupti.h>
#include <dlfcn.h>

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
};

Api g_api;
std::once_flag g_loaded;
std::string g_load_error;

// What the buffers delivered: each external id's CUPTI correlation ids, and each correlation
// id's GPU work. Joined in collect(), since the two kinds of record arrive in any order.
std::mutex g_mu;
std::unordered_map<uint32_t, uint64_t> g_external;                // correlation id -> external id
std::unordered_map<uint32_t, CuptiTimer::Span> g_by_correlation;  // correlation id -> work
size_t g_dropped = 0;

void note_work(uint32_t correlation, uint64_t start, uint64_t end) {
  CuptiTimer::Span& s = g_by_correlation[correlation];
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
        note_work(k->correlationId, k->start, k->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
        note_work(m->correlationId, m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
        note_work(m->correlationId, m->start, m->end);
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
                   find(lib, "cuptiGetResultString", &a.result_string);
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

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
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
  for (CUpti_ActivityKind kind : kKinds) {
    r = g_api.enable(kind);
    if (r != CUPTI_SUCCESS) {
      *why = describe("cuptiActivityEnable", r);
      for (CUpti_ActivityKind k : kKinds) g_api.disable(k);
      return nullptr;
    }
  }
  return std::unique_ptr<CuptiTimer>(new CuptiTimer());
}

CuptiTimer::~CuptiTimer() {
  for (CUpti_ActivityKind kind : kKinds) g_api.disable(kind);
  g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mu);
  g_external.clear();
  g_by_correlation.clear();
}

void CuptiTimer::push(uint64_t id) {
  g_api.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiTimer::pop() {
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
  // The iteration is over and flushed: nothing later can join what is left (work outside any
  // task, such as filling inputs), so it goes.
  g_external.clear();
  g_by_correlation.clear();
  g_dropped += lost;
  *dropped = g_dropped;
  return spans;
}

}  // namespace fob
