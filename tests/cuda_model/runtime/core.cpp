// The model's shared services: violations, the clock, API call records for CUPTI, per-thread
// errors and NVTX ranges, vector clocks and completions.
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "internal.h"

namespace fobmodel {
namespace {

std::atomic<size_t> violation_count{0};
std::atomic<uint32_t> next_correlation{1};
CuptiHooks cupti_hooks;

bool violations_are_fatal() {
  const char* fatal = std::getenv("FOB_MODEL_FATAL");
  return fatal == nullptr || std::string(fatal) != "0";
}

struct ThreadState {
  cudaError_t last_error = cudaSuccess;
  std::vector<std::string> pushed;
  std::vector<uint64_t> started;  // start ranges this thread opened, still open
  int api_depth = 0;
  uint32_t correlation = 0;
};
ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

// Start/end ranges are process-wide in NVTX (they may end on another thread).
std::mutex ranges_mutex;
std::map<uint64_t, std::string> open_ranges;
uint64_t next_range = 1;

std::mutex handoff_mutex;
std::map<const void*, detail::VectorClock> handoffs;

// NVTX3 loads the injection library NVTX_INJECTION64_PATH names, on the first NVTX call
// (nvtx3/nvtxDetail/nvtxInit.h). Where it is unset, the model's own injection library beside
// this one is named, so that every op knows its plan task without the caller's help.
__attribute__((constructor)) void name_nvtx_injection() {
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&name_nvtx_injection), &info) == 0 || !info.dli_fname) return;
  std::string path = info.dli_fname;
  path = path.substr(0, path.rfind('/') + 1) + "libfobmodel_nvtx.so";
  if (access(path.c_str(), R_OK) == 0) setenv("NVTX_INJECTION64_PATH", path.c_str(), 0);
}

}  // namespace

void violation(const std::string& rule, const std::string& text) {
  ++violation_count;
  std::fprintf(stderr, "[cuda model] %s: %s\n", rule.c_str(), text.c_str());
  std::fflush(stderr);
  if (violations_are_fatal()) std::_Exit(86);
}

size_t violations() {
  return violation_count.load();
}

uint64_t clock_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

void install_cupti_hooks(const CuptiHooks& hooks) {
  cupti_hooks = hooks;
}

namespace detail {
const CuptiHooks& hooks() {
  return cupti_hooks;
}
}  // namespace detail

ApiCall::ApiCall(Domain domain, uint32_t cbid, const char* name) {
  ThreadState& state = thread_state();
  outermost_ = state.api_depth++ == 0;
  if (outermost_) state.correlation = next_correlation++;
  correlation_ = state.correlation;
  start_ns_ = clock_ns();
  domain_ = domain;
  cbid_ = cbid;
  name_ = name;
}

ApiCall::~ApiCall() {
  --thread_state().api_depth;
  if (outermost_ && cupti_hooks.api) {
    cupti_hooks.api(domain_, cbid_, name_, correlation_, start_ns_, clock_ns());
  }
}

uint32_t current_correlation() {
  return thread_state().api_depth > 0 ? thread_state().correlation : 0;
}

cudaError_t record_error(cudaError_t error) {
  if (error != cudaSuccess) thread_state().last_error = error;
  return error;
}

namespace detail {
cudaError_t take_last_error(bool reset) {
  const cudaError_t error = thread_state().last_error;
  if (reset) thread_state().last_error = cudaSuccess;
  return error;
}
}  // namespace detail

void nvtx_push(const char* name) {
  thread_state().pushed.emplace_back(name ? name : "");
}

void nvtx_pop() {
  if (!thread_state().pushed.empty()) thread_state().pushed.pop_back();
}

uint64_t nvtx_start(const char* name) {
  std::lock_guard lock(ranges_mutex);
  const uint64_t id = next_range++;
  open_ranges[id] = name ? name : "";
  thread_state().started.push_back(id);
  return id;
}

void nvtx_end(uint64_t id) {
  std::lock_guard lock(ranges_mutex);
  open_ranges.erase(id);
}

std::string current_task() {
  ThreadState& state = thread_state();
  if (!state.pushed.empty()) return state.pushed.back();
  return current_range();
}

std::string current_range() {
  ThreadState& state = thread_state();
  std::lock_guard lock(ranges_mutex);
  while (!state.started.empty() && !open_ranges.contains(state.started.back())) {
    state.started.pop_back();
  }
  return state.started.empty() ? std::string() : open_ranges[state.started.back()];
}

void host_release(const void* key) {
  std::lock_guard model(detail::model_mutex());
  std::lock_guard lock(handoff_mutex);
  handoffs[key].join(detail::host_clock());
}

void host_acquire(const void* key) {
  std::lock_guard model(detail::model_mutex());
  std::lock_guard lock(handoff_mutex);
  const auto found = handoffs.find(key);
  if (found != handoffs.end()) detail::host_clock().join(found->second);
}

namespace detail {

void VectorClock::join(const VectorClock& other) {
  if (ticks.size() < other.ticks.size()) ticks.resize(other.ticks.size(), 0);
  for (size_t i = 0; i < other.ticks.size(); ++i) ticks[i] = std::max(ticks[i], other.ticks[i]);
}

uint64_t VectorClock::tick(uint32_t agent) {
  if (ticks.size() <= agent) ticks.resize(agent + 1, 0);
  return ++ticks[agent];
}

uint32_t new_agent() {
  static std::atomic<uint32_t> next{0};
  return next++;
}

VectorClock& host_clock() {
  thread_local VectorClock clock;
  return clock;
}

void Completion::finish(uint64_t start_ns, uint64_t end_ns) {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    start_ns_ = start_ns;
    end_ns_ = end_ns;
  }
  cv_.notify_all();
}

void Completion::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
}

bool Completion::ready() {
  std::lock_guard lock(mutex_);
  return done_;
}

uint64_t Completion::start_ns() {
  std::lock_guard lock(mutex_);
  return start_ns_;
}

uint64_t Completion::end_ns() {
  std::lock_guard lock(mutex_);
  return end_ns_;
}

std::string pointer_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace detail
}  // namespace fobmodel
