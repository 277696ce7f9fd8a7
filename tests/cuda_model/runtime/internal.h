// The runtime model's private state: streams and their worker threads, events, vector clocks,
// the device and pinned arenas, captures and graphs. Shared by the runtime's sources only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <cupti_runtime_cbid.h>

#include "fobmodel/model.h"

// Opens the ApiCall of a runtime function: its CUPTI callback id and name.
#define FOB_RUNTIME_CALL(name, version)                         \
  ::fobmodel::ApiCall fob_api_call(::fobmodel::Domain::runtime, \
                                   CUPTI_RUNTIME_TRACE_CBID_##name##_##version, #name)

namespace fobmodel::detail {

// A vector clock over agents (streams and graph lanes, each with a dense id).
struct VectorClock {
  std::vector<uint64_t> ticks;
  uint64_t at(uint32_t agent) const { return agent < ticks.size() ? ticks[agent] : 0; }
  void join(const VectorClock& other);
  uint64_t tick(uint32_t agent);
};
uint32_t new_agent();

// The clock of what this host thread has synchronised with (stream/event/device synchronise,
// successful queries, host_acquire): joined into every op this thread enqueues.
VectorClock& host_clock();

// Signalled when an op has run: what host syncs, event waits and queries wait for.
class Completion {
 public:
  void finish(uint64_t start_ns, uint64_t end_ns);
  void wait();
  bool ready();
  uint64_t start_ns();
  uint64_t end_ns();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  uint64_t start_ns_ = 0;
  uint64_t end_ns_ = 0;
};
using CompletionPtr = std::shared_ptr<Completion>;

// Who an op is, for the race detector's reports.
struct OpIdentity {
  std::string name;
  std::string task;
  std::string stream;
  uint64_t sequence = 0;  // enqueue order: names a racing pair the same way on every run
};
uint64_t next_sequence();

// An op as queued on a stream's worker: what it waits for, its clock, and its completion.
struct QueuedOp {
  Op op;
  std::vector<CompletionPtr> after;
  CompletionPtr done = std::make_shared<Completion>();
  VectorClock clock;
  uint32_t agent = 0;
  uint32_t stream_id = 0;
  uint64_t graph_node = 0;
  uint64_t enqueue_ns = 0;  // clock_ns() when it was queued (a replay: when the graph launched)
  std::shared_ptr<const OpIdentity> identity;
};

// The op log (op_log.cpp): one line per op that ran, when FOB_MODEL_OP_LOG names a file.
void log_op(const QueuedOp& op, uint64_t start_ns, uint64_t end_ns);

// The race detector (race.cpp): checks one access of a running op against the accesses before it.
void check_access(const QueuedOp& op, uintptr_t begin, uintptr_t end, bool write);
void check_footprint(const QueuedOp& op, const Footprint& footprint);
void forget_accesses(uintptr_t begin, uintptr_t end);

struct Capture;

struct Stream {
  Stream(int device, unsigned flags, int priority, bool legacy);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void push(std::unique_ptr<QueuedOp> op);

  const int device;
  const unsigned flags;
  const int priority;
  const bool legacy;
  const uint32_t agent;
  const uint32_t id;
  std::string label;
  // Program order, under the model's mutex.
  VectorClock clock;
  CompletionPtr last;
  // Capture membership (capture.cpp): the capture this stream records into and the nodes the
  // next node depends on.
  Capture* capture = nullptr;
  std::vector<size_t> frontier;

 private:
  void work();
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::unique_ptr<QueuedOp>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

// What an event last recorded: the clock and completion of that point of its stream.
struct EventState {
  unsigned flags = 0;
  bool recorded = false;
  CompletionPtr point;  // null until recorded
  VectorClock clock;
  // Recorded inside a capture: the nodes the record stands for (capture.cpp).
  Capture* capture = nullptr;
  std::vector<size_t> captured_frontier;
};

// The model's global state, guarded by mutex(): every API call that touches streams, events,
// clocks or captures holds it.
std::mutex& model_mutex();
Stream* resolve_stream(cudaStream_t stream);  // null: not a live stream
bool live_event(cudaEvent_t event);
EventState& event_state(cudaEvent_t event);
std::vector<Stream*> device_streams(int device);
int current_device();
int device_count();

// Queues (or captures) an op whose clock and waits are already decided by the caller's rules.
// Holds model_mutex(). Returns the op's completion.
CompletionPtr enqueue_locked(Stream& stream, Op op, std::vector<CompletionPtr> after);
// Host synchronisation with a point: waits without the mutex, then joins its clock.
void host_wait(const CompletionPtr& point, const VectorClock& clock);

// Capture (capture.cpp). Under model_mutex().
cudaError_t capture_op(Stream& stream, Op op);
// A call that would synchronise or implicitly use the legacy stream while captures are active:
// the documented error (cudaErrorStreamCaptureUnsupported / Implicit) after invalidating them.
// `synchronizes`: the call waits for device work (a "potentially unsafe" call while a global or,
// on the capturing thread, thread-local capture is active).
cudaError_t capture_forbids(const char* call, Stream* stream, bool uses_legacy,
                            bool synchronizes = true);
cudaError_t capture_record_event(Stream& stream, cudaEvent_t event, bool external);
cudaError_t capture_wait_event(Stream& stream, EventState& event);

// Bounds of every range an op touches (rule "memcheck"), before it is queued or captured.
cudaError_t check_bounds(const Op& op);
Stream* legacy_stream(int device);

// Memory (memory.cpp).
bool footprint_in_bounds(const Footprint& footprint, std::string* why);
void kernel_access(const void* address, size_t size, bool write);
void set_traced_op(QueuedOp* op);
// The live allocation holding `pointer` (its base, and its size in *size); null if none.
const void* allocation_of(const void* pointer, size_t* size);

std::string pointer_text(const void* p);
// The number of copy engines cudaDevAttrAsyncEngineCount reports (FOB_MODEL_COPY_ENGINES).
int copy_engines();

// CUDA IPC (ipc.cpp). cudaFree's rules for imported and exported memory; the exporter of an
// imported pointer (its process, device and the offset in that device's arena).
cudaError_t ipc_before_free(void* pointer);
bool imported_owner(const void* pointer, int* pid, int* device, uint64_t* offset);
bool exported_at(const void* pointer, int* device, uint64_t* offset);
// Whether this process has exported or imported memory (the cross-process detector's cue).
bool ipc_active();
// The cross-process race detector (xrace.cpp): checks one access of a running op to memory shared
// through CUDA IPC against the other processes' accesses, and records it.
void check_shared_access(const QueuedOp& op, uintptr_t begin, uintptr_t end, bool write);
// A host thread synchronised with device work (under model_mutex()): exports publish it.
void note_host_synchronised();
struct Knowledge;
// cudaIpcOpenMemHandle: what the exporter published becomes known to this host thread.
void acquire_published(const Knowledge& published);
// The op the calling thread is running (a stream's or graph lane's worker), else null.
const QueuedOp* running_queued_op();
// This thread's last error (cudaGetLastError resets it, cudaPeekAtLastError does not).
cudaError_t take_last_error(bool reset);
const CuptiHooks& hooks();
const char* error_name(cudaError_t error);

}  // namespace fobmodel::detail
