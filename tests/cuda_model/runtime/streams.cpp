// Streams: each runs its ops in order on its own thread. enqueue() decides an op's clock and what
// it waits for from program order (stream order, the legacy default stream's implicit
// synchronisation, the host's synchronisations), so the race detector's verdict never depends on
// how the threads interleave.
#include <atomic>
#include <map>

#include "internal.h"

namespace fobmodel::detail {
namespace {

std::atomic<uint32_t> next_stream_id{1};

struct Registry {
  std::map<const void*, std::unique_ptr<Stream>> streams;
  std::map<int, std::unique_ptr<Stream>> legacy;  // per device, made on first use
};
Registry& registry() {
  static Registry* instance = new Registry;  // stream threads may outlive static destruction
  return *instance;
}

const CuptiHooks& cupti() {
  return hooks();
}

// The op this thread is running (note_running_op, running_op), and how many ops run now on each
// physical device's streams (device_running, for NVML's idle reason).
thread_local QueuedOp* running = nullptr;
constexpr int kMaxPhysical = 64;
std::atomic<int> running_on[kMaxPhysical];

std::atomic<int>* running_counter(int device) {
  const int physical = physical_device_of(device);
  return physical >= 0 && physical < kMaxPhysical ? &running_on[physical] : nullptr;
}

void run_op(QueuedOp& queued, int device) {
  std::atomic<int>* counter = running_counter(device);
  if (counter) counter->fetch_add(1);
  running = &queued;
  const uint64_t start = clock_ns();
  for (const Footprint& footprint : queued.op.footprint) check_footprint(queued, footprint);
  if (queued.op.run) {
    if (queued.op.traces_accesses) set_traced_op(&queued);
    queued.op.run();
    set_traced_op(nullptr);
  }
  const uint64_t end = clock_ns();
  running = nullptr;
  if (counter) counter->fetch_sub(1);
  if (queued.op.activity != Activity::none && cupti().activity) {
    cupti().activity(queued.op, queued.stream_id, queued.graph_node, start, end);
  }
  log_op(queued, start, end);
  queued.done->finish(start, end);
}

}  // namespace

uint64_t next_sequence() {
  static std::atomic<uint64_t> sequence{0};
  return ++sequence;
}

std::mutex& model_mutex() {
  static std::mutex* instance = new std::mutex;
  return *instance;
}

Stream::Stream(int device_, unsigned flags_, int priority_, bool legacy_)
    : device(device_),
      flags(flags_),
      priority(priority_),
      legacy(legacy_),
      agent(new_agent()),
      id(next_stream_id++),
      worker_([this] { work(); }) {
  label = legacy ? "legacy default of device " + std::to_string(device) : std::to_string(id);
}

Stream::~Stream() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  worker_.join();
}

void Stream::push(std::unique_ptr<QueuedOp> op) {
  {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(std::move(op));
  }
  queue_cv_.notify_all();
}

void Stream::work() {
  for (;;) {
    std::unique_ptr<QueuedOp> op;
    {
      std::unique_lock lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const CompletionPtr& before : op->after) before->wait();
    run_op(*op, device);
  }
}

Stream* legacy_stream(int device) {
  auto& legacy = registry().legacy[device];
  if (!legacy) legacy = std::make_unique<Stream>(device, 0u, 0, true);
  return legacy.get();
}

// 0 and cudaStreamLegacy are the legacy default stream of the current device. The per-thread
// default stream is not modelled (the cuda backend never uses it): an error, not a guess.
Stream* resolve_stream(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy) return legacy_stream(current_device());
  const auto found = registry().streams.find(stream);
  return found == registry().streams.end() ? nullptr : found->second.get();
}

cudaStream_t add_stream(std::unique_ptr<Stream> stream) {
  auto* handle = reinterpret_cast<cudaStream_t>(stream.get());
  registry().streams[handle] = std::move(stream);
  return handle;
}

std::unique_ptr<Stream> remove_stream(cudaStream_t stream) {
  auto found = registry().streams.find(stream);
  if (found == registry().streams.end()) return nullptr;
  std::unique_ptr<Stream> removed = std::move(found->second);
  registry().streams.erase(found);
  return removed;
}

std::vector<Stream*> device_streams(int device) {
  std::vector<Stream*> streams;
  for (auto& [handle, stream] : registry().streams) {
    if (stream->device == device) streams.push_back(stream.get());
  }
  if (registry().legacy.contains(device)) streams.push_back(registry().legacy[device].get());
  return streams;
}

CompletionPtr enqueue_locked(Stream& stream, Op op, std::vector<CompletionPtr> after) {
  auto queued = std::make_unique<QueuedOp>();
  op.correlation = current_correlation();
  op.task = current_task();
  op.range = current_range();
  stream.clock.join(host_clock());
  // The legacy default stream waits for all work on the device's blocking streams, and work on
  // a blocking stream waits for the legacy stream (CUDA Runtime API, "Stream synchronization
  // behavior": legacy default stream). Streams made with cudaStreamNonBlocking do neither.
  if (stream.legacy) {
    for (Stream* other : device_streams(stream.device)) {
      if (other == &stream || (other->flags & cudaStreamNonBlocking) != 0) continue;
      stream.clock.join(other->clock);
      if (other->last) after.push_back(other->last);
    }
  } else if ((stream.flags & cudaStreamNonBlocking) == 0 &&
             registry().legacy.contains(stream.device)) {
    Stream* legacy = registry().legacy[stream.device].get();
    stream.clock.join(legacy->clock);
    if (legacy->last) after.push_back(legacy->last);
  }
  stream.clock.tick(stream.agent);
  queued->enqueue_ns = clock_ns();
  queued->identity =
      std::make_shared<OpIdentity>(OpIdentity{op.name, op.task, stream.label, next_sequence()});
  queued->op = std::move(op);
  queued->after = std::move(after);
  queued->clock = stream.clock;
  queued->agent = stream.agent;
  queued->stream_id = stream.id;
  CompletionPtr done = queued->done;
  stream.last = done;
  stream.push(std::move(queued));
  return done;
}

void host_wait(const CompletionPtr& point, const VectorClock& clock) {
  if (point) point->wait();
  std::lock_guard lock(model_mutex());
  host_clock().join(clock);
  note_host_synchronised();
}

// Bounds of every range the op touches, before it is queued: the rule "memcheck".
cudaError_t check_bounds(const Op& op) {
  for (const Footprint& footprint : op.footprint) {
    std::string why;
    if (!footprint_in_bounds(footprint, &why)) {
      violation("memcheck", op.name + " (task \"" + current_task() + "\"): " + why);
      return cudaErrorInvalidValue;
    }
  }
  return cudaSuccess;
}

const QueuedOp* running_queued_op() {
  return running;
}

}  // namespace fobmodel::detail

namespace fobmodel {

void note_running_op(const std::string& fact) {
  detail::QueuedOp* op = detail::running;
  if (op == nullptr) return;
  if (!op->op.note.empty()) op->op.note += ' ';
  op->op.note += fact;
}

bool running_op(std::string* stream, std::string* task) {
  const detail::QueuedOp* op = detail::running;
  if (op == nullptr) return false;
  *stream = op->identity->stream;
  *task = op->identity->task;
  return true;
}

bool device_running(int physical) {
  return physical >= 0 && physical < detail::kMaxPhysical &&
         detail::running_on[physical].load() > 0;
}

cudaError_t enqueue(cudaStream_t stream, Op op) {
  using namespace detail;
  std::unique_lock lock(model_mutex());
  Stream* target = resolve_stream(stream);
  if (target == nullptr) return record_error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t bounds = check_bounds(op); bounds != cudaSuccess) {
    return record_error(bounds);
  }
  if (target->capture != nullptr) return record_error(capture_op(*target, std::move(op)));
  if (target->legacy) {
    if (const cudaError_t e = capture_forbids(op.name.c_str(), target, true, false);
        e != cudaSuccess) {
      return record_error(e);
    }
  }
  enqueue_locked(*target, std::move(op), {});
  return cudaSuccess;
}

}  // namespace fobmodel
