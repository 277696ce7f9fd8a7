// The test stand-in for the runtime model's core: see fake_core.h.
#include "fake_core.h"

#include <atomic>
#include <mutex>
#include <utility>

namespace fobmodel {
namespace {

std::mutex fake_mutex;
CuptiHooks installed;
std::atomic<uint32_t> next_correlation{1};
uint64_t graph_node = 0;
std::vector<std::pair<uintptr_t, uintptr_t>> device_ranges;
thread_local std::string* running_note = nullptr;

struct ThreadCall {
  int depth = 0;
  uint32_t correlation = 0;
};
ThreadCall& thread_call() {
  thread_local ThreadCall call;
  return call;
}

}  // namespace

namespace fake {
std::vector<Enqueued>& enqueued() {
  static std::vector<Enqueued> ops;
  return ops;
}
std::vector<std::string>& reported() {
  static std::vector<std::string> texts;
  return texts;
}
const CuptiHooks& hooks() {
  return installed;
}
void set_graph_node(uint64_t node) {
  graph_node = node;
}
void add_device_range(const void* base, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(base);
  device_ranges.emplace_back(begin, begin + bytes);
}
}  // namespace fake

cudaError_t enqueue(cudaStream_t stream, Op op) {
  op.correlation = current_correlation();
  size_t index = 0;
  {
    std::lock_guard lock(fake_mutex);
    index = fake::enqueued().size();
    fake::enqueued().push_back({stream, op.name, op.activity, op.footprint, op.correlation, ""});
  }
  const uint64_t start = clock_ns();
  running_note = &op.note;
  if (op.run) op.run();
  running_note = nullptr;
  {
    std::lock_guard lock(fake_mutex);
    fake::enqueued()[index].note = op.note;
  }
  if (op.activity != Activity::none && installed.activity) {
    installed.activity(op, 7, graph_node, start, clock_ns());
  }
  return cudaSuccess;
}

void note_running_op(const std::string& fact) {
  if (running_note == nullptr) return;
  if (!running_note->empty()) *running_note += ' ';
  *running_note += fact;
}

void violation(const std::string& rule, const std::string& text) {
  std::lock_guard lock(fake_mutex);
  fake::reported().push_back(rule + ": " + text);
}

size_t violations() {
  std::lock_guard lock(fake_mutex);
  return fake::reported().size();
}

ApiCall::ApiCall(Domain domain, uint32_t cbid, const char* name)
    : start_ns_(clock_ns()), domain_(domain), cbid_(cbid), name_(name) {
  ThreadCall& call = thread_call();
  outermost_ = call.depth++ == 0;
  if (outermost_) call.correlation = next_correlation++;
  correlation_ = call.correlation;
}

ApiCall::~ApiCall() {
  --thread_call().depth;
  if (outermost_ && installed.api) {
    installed.api(domain_, cbid_, name_, correlation_, start_ns_, clock_ns());
  }
}

uint32_t current_correlation() {
  return thread_call().depth > 0 ? thread_call().correlation : 0;
}

Memory memory_of(const void* pointer, int* device) {
  const auto p = reinterpret_cast<uintptr_t>(pointer);
  for (const auto& [begin, end] : device_ranges) {
    if (p >= begin && p < end) {
      if (device) *device = 0;
      return Memory::device;
    }
  }
  return Memory::other;
}

uint64_t clock_ns() {
  static std::atomic<uint64_t> ticks{1000};
  return ticks += 10;
}

void install_cupti_hooks(const CuptiHooks& hooks) {
  installed = hooks;
}

}  // namespace fobmodel
