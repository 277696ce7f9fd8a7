// The cuda model's core, shared by its libraries (libcudart.so.13, libcuda.so.1,
// libcublas.so.13, libnccl.so.2, libcupti.so.13 and the NVTX injection library; see
// tests/cuda_model/README.md). The runtime library owns and exports it; the others link to it.
// Nothing in the cuda backend sees this header: the backend calls the real CUDA API, compiled
// against the real CUDA 13 headers, and the model answers.
//
// What every library does with an API call:
//   1. opens an ApiCall (CUPTI's runtime/driver API record, its correlation id, and the NVTX
//      range the calling thread is in: the plan task it belongs to);
//   2. validates its arguments as the real library documents, returning the documented error;
//   3. describes the device work as an Op: which ranges it reads and writes (its Footprint,
//      bounds-checked against live allocations and checked for races), what it runs, and what
//      CUPTI records of it;
//   4. enqueue()s it on a stream, which runs ops in order on its own thread, or records it into
//      the graph that stream is capturing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fobmodel {

// The model names itself wherever the real stack would name a GPU: cudaDeviceProp::name, the
// bus ids, cuDriverGetVersion's text. The cuda backend passes it on to /system.
inline constexpr const char* kDeviceName = "cuda model (CPU)";

// A range an op reads or writes: `rows` runs of `width` bytes, `pitch` bytes apart.
struct Footprint {
  const void* base = nullptr;
  size_t width = 0;
  size_t rows = 1;
  size_t pitch = 0;
  bool write = false;
};

// What CUPTI's activity API records of an op (cupti model): nothing, or one record of a kind.
enum class Activity { none, kernel, memcpy, memset };

struct Op {
  std::string name;  // "cublasGemmEx", "ncclSend(peer 1)", "kernel softmax"
  Activity activity = Activity::none;
  std::vector<Footprint> footprint;  // every byte it touches, before it runs
  std::function<void()> run;         // on the stream's thread, in stream order
  // A kernel compiled with sanitizer coverage (device.h): the loads and stores it makes while
  // running are bounds- and race-checked as it runs, in addition to `footprint`.
  bool traces_accesses = false;
  // Filled by enqueue(): the API call that made it and the NVTX range (plan task) it is in.
  uint32_t correlation = 0;
  std::string task;
  // The start/end range open on the enqueuing thread (the cuda backend's case), for the op log.
  std::string range;
  // Facts the library states about the op ("key=value" words), for the op log
  // (FOB_MODEL_OP_LOG, README.md); note_running_op() adds the ones only its run can know.
  std::string note;
  // A flag write (cuStreamWriteValue32): synchronisation, not data, for the cross-process race
  // detector, which neither checks nor records it.
  bool flag = false;
};

// Checks the footprint (a range outside every live allocation is the rule "memcheck": reported,
// and the call fails with cudaErrorInvalidValue, as compute-sanitizer's memcheck would stop it),
// then queues the op on `stream` (0 or cudaStreamLegacy: the legacy default stream, which
// orders against every blocking stream of its device) or records it into the graph `stream` is
// capturing. The race detector sees it in program order: the vector clock of its stream at
// enqueue.
cudaError_t enqueue(cudaStream_t stream, Op op);

// Appends " fact" to the note of the op running on the calling thread (a stream's or graph
// lane's worker): what only running it shows, such as whether the operands it read were
// integers. Does nothing on another thread.
void note_running_op(const std::string& fact);
// The op running on the calling thread as the race detector names it: its stream ("3", "legacy
// default of device 0", "5 (graph lane 1)") and its task. False on a thread that runs no op.
bool running_op(std::string* stream, std::string* task);

// A rule the program broke (a race, an access out of bounds, a deadlock, an illegal call during
// capture): written to stderr as "[cuda model] RULE: text", counted, and, with
// FOB_MODEL_FATAL=1 (the default), the process exits 86 after the report so that a test sees
// it. The tests read the report; `rule` is one of the names in README.md.
void violation(const std::string& rule, const std::string& text);
// How many violations were reported in this process.
size_t violations();

// Host-side hand-offs inside the program that the detector cannot see (the staged MPI transport's
// host thread reading pinned memory a stream wrote after an event synchronize is visible; a
// hand-off through a plain std::atomic is not): release on one thread, acquire on another, with
// the same key.
void host_release(const void* key);
void host_acquire(const void* key);

// The API call in progress on this thread, for CUPTI (a runtime or driver API activity record
// and its correlation id) and for the ops it enqueues. Nested calls (the runtime calling the
// driver) belong to the outermost.
enum class Domain { runtime, driver };
class ApiCall {
 public:
  ApiCall(Domain domain, uint32_t cbid, const char* name);
  ~ApiCall();
  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;
  uint32_t correlation() const { return correlation_; }

 private:
  uint32_t correlation_ = 0;
  bool outermost_ = false;
  uint64_t start_ns_ = 0;
  Domain domain_ = Domain::runtime;
  uint32_t cbid_ = 0;
  const char* name_ = "";
};
// The correlation id of the API call in progress on this thread (0: none).
uint32_t current_correlation();

// Where a pointer lies: in the device arena (cudaMalloc; `device` gets its device), in the pinned
// host arena (cudaMallocHost), or elsewhere (pageable host memory, or a wild pointer).
enum class Memory { device, pinned_host, other };
Memory memory_of(const void* pointer, int* device = nullptr);
// The base of the live allocation (device or pinned host) that holds all of [pointer, pointer +
// bytes); null when none does.
const void* live_allocation(const void* pointer, size_t bytes);

// Device memory shared through CUDA IPC: for memory imported with cudaIpcOpenMemHandle, the
// exporting process's id; for an allocation of this process exported with cudaIpcGetMemHandle,
// this process's id. False for any other memory.
bool ipc_owner(const void* pointer, int* pid);

// The cross-process race detector's flags, called by the stream memory operations as they run on
// a stream: a write publishes, before it stores `value`, what its op is ordered after; a wait
// satisfied by `seen` (waiting for `wanted`; `geq`: the cyclic >= condition) acquires what the
// write it observed published. Nothing for memory not shared through CUDA IPC.
void flag_written(const void* word, uint32_t value);
void flag_observed(const void* word, uint32_t wanted, uint32_t seen, bool geq);

// The machine the model pretends to be, beyond what CUDA shows. FOB_MODEL_DEVICES physical GPUs,
// each with its PCI bus id ("0000:18:00.0"). CUDA_VISIBLE_DEVICES hides and renumbers them for
// CUDA only: it is a CUDA environment variable, and "The NVML index may not correlate with other
// APIs, such as the CUDA device index" (nvml.h, nvmlDeviceGetHandleByIndex_v2).
int physical_device_count();
std::string physical_bus_id(int physical);
// The physical index of CUDA ordinal `ordinal` (-1 if it is not a visible ordinal).
int physical_device_of(int ordinal);
// Whether an op of this process is running on a stream of that physical device now.
bool device_running(int physical);
// FOB_MODEL_TOPOLOGY: how the GPUs are linked. nvlink (the default): NVLink between every pair;
// pcie: through the PCIe host bridge; isolated: NVLink exists but each rank sees only its own
// GPU, as under per-task cgroups (NVIDIA/nccl#1066). Another value is the rule "setup".
enum class Topology { nvlink, pcie, isolated };
Topology topology();

// The runtime's per-thread error state: records a failed call's error for cudaGetLastError /
// cudaPeekAtLastError (what every runtime API call does) and returns it. cudaSuccess is ignored.
cudaError_t record_error(cudaError_t error);

// The NVTX injection library forwards the calling thread's ranges here; current_task() is the
// innermost pushed range of this thread (else the last start range this thread opened that is
// still open, else ""). It becomes Op::task.
void nvtx_push(const char* name);
void nvtx_pop();
uint64_t nvtx_start(const char* name);
void nvtx_end(uint64_t id);
std::string current_task();
// The last start/end range the calling thread opened that is still open, "" if none: what
// current_task() falls back to, whatever the thread has pushed.
std::string current_range();

// Nanoseconds on the model's GPU clock: CLOCK_MONOTONIC_RAW, the same for every stream thread,
// from which cudaEventElapsedTime and CUPTI's timestamps are both taken.
uint64_t clock_ns();

// What the CUPTI model hears (installed by libcupti.so.13 when it loads; absent, nothing is
// recorded). Called on the thread where the event happens.
struct CuptiHooks {
  // An API call finished (the outermost of a nesting).
  void (*api)(Domain domain, uint32_t cbid, const char* name, uint32_t correlation,
              uint64_t start_ns, uint64_t end_ns) = nullptr;
  // An op with an activity ran on a stream: its start and end on clock_ns().
  void (*activity)(const Op& op, uint32_t stream_id, uint64_t graph_node, uint64_t start_ns,
                   uint64_t end_ns) = nullptr;
  // A graph node was created while capturing (original 0) or cloned by instantiation.
  void (*graph_node)(uint64_t node, uint64_t original) = nullptr;
};
void install_cupti_hooks(const CuptiHooks& hooks);

}  // namespace fobmodel
