// What the executor needs from a device: buffers, two streams, cross-stream waits on task
// completion, and per-task timestamps. Backends execute task kinds; they know no strategy.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "fob/link_emulation.h"
#include "fob/plan.h"

namespace fob {

struct BackendOptions {
  MPI_Comm comm = MPI_COMM_WORLD;
  LinkEmulation link;
  int blas_threads = 1;
  uint64_t seed = 1;
  // Every transfer goes to this process itself: one rank runs a larger world's plans
  // (CaseSpec::loopback), so that one GPU exercises the comm path. The collectives run on this
  // process's own communicator (a 1-rank NCCL communicator) and the ring steps to itself.
  bool loopback = false;
  // cuda only.
  std::string transport = "nccl";  // nccl, or mpi: host-staged transfers on a host thread
  bool graphs = false;             // capture one iteration as a CUDA graph and replay it
  int comm_sms = -1;               // SMs overlapping cases' GEMMs leave to NCCL; -1 auto
  double timeout_s = 300;          // bounds waits that happen while launching (transport mpi)
  // "exact": fp32 GEMMs in fp32, split-K reductions in fp32 (every verification bit-exact or
  // within its stated bound); "fast": TF32 for fp32 and reduced-precision split-K reductions
  // allowed, as PyTorch's and Transformer Engine's defaults run, verified within its own bound
  // (tolerance.h). The CPU backend computes alike in both.
  std::string math = "exact";
};

// Per-task times of one iteration, seconds from the iteration's start (NaN if not run).
struct IterationTimes {
  std::vector<double> start;
  std::vector<double> end;
  double step = 0;  // this rank's iteration time: the last task's end
  // Where start/end come from kernel activity (CUPTI): each task's stream-event bracket too,
  // for checks that the two agree. Empty otherwise.
  std::vector<double> stream_start, stream_end;
  // With stream_start: kernel-activity times count from a marker that ran within this many
  // seconds after the stream events' origin, so the two timers agree to within it (and the
  // events' own resolution, about 0.5 us), and no closer.
  double origin_lag = 0;
  // Where some tasks are timed on the host clock (the cuda backend's --transport mpi): how far
  // their times and the device-timed ones can disagree, the host clock's bracket around the
  // iteration's origin (a host thread woken late widens it), plus origin_lag where the device
  // times are kernel activity counted from CUPTI's marker.
  double host_alignment = 0;
  // The timer that took start/end in this iteration, where it is not timer() (a cuda iteration
  // whose kernel activity CUPTI could not deliver falls back to its stream events). Every
  // iteration's timer is recorded with the case, so no time is labelled by a timer that did
  // not take it.
  std::string timer;
  // Host seconds from begin() to the end of the last launch: what launching the iteration cost
  // the host, which a timed iteration's step does not hold (the device starts once it is all
  // queued). NaN where not measured.
  double launch = std::numeric_limits<double>::quiet_NaN();
  // The device started before the last launch: the cuda backend's gate was opened by its
  // keeper (a launch that blocked, or launching slower than the gate's limit), so the step may
  // hold launch time. Recorded with the case.
  bool gate_early = false;
  // No timer could take this iteration's task times (the cuda backend's CUPTI lost its records
  // where no events were recorded): run it again; the backend times the next one another way.
  bool retry = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const = 0;  // "cpu (x86_64, 2 cores)" or a GPU name and bus id
  virtual std::string blas() const = 0;
  virtual std::string transport() const = 0;
  // How task_start/task_end are taken, for the results file's /system `timer`: "host
  // steady_clock", "cuda events (stream order)", "cupti kernel activity". Times from two timers
  // are not comparable.
  virtual std::string timer() const = 0;

  // Memory this backend needs for a plan, and what this rank may use (-1: not known, not
  // checked), described by memory_name() ("device memory"). Checked for every case before
  // anything is allocated.
  virtual int64_t bytes_needed(const Plan& plan) const { return plan.buffer_bytes(); }
  virtual int64_t bytes_free() const { return -1; }
  virtual std::string memory_name() const { return "device memory"; }

  // Allocates and fills the plan's buffers. Several plans may be prepared at once (the executor
  // interleaves the cases of one shape); each keeps its buffers until release(). Throws
  // InputError if the plan cannot run here (e.g. a dtype this backend lacks), before allocating.
  virtual void setup(const Plan& plan) = 0;
  virtual void release(const Plan& plan) = 0;
  // Fills every buffer that is not input data with NaN, so a task that fails to write its
  // output cannot pass verification with a previous iteration's values.
  virtual void poison(const Plan& plan) = 0;
  virtual std::vector<double> read(const Plan& plan, int buffer) = 0;

  // Overwrites the plan's input regions with timing data (input_hash.h, timing_element): what
  // the timed iterations run on. poison() writes the integer inputs back for verification.
  virtual void fill_timing_data(const Plan& plan) = 0;

  // One iteration: begin(), then launch() every task in plan order, then finish().
  // launch() queues the task on its stream behind `wait_for` (tasks on the other stream; the
  // vector stays valid until finish()) and returns at once, as a CUDA launch does; only a task that
  // needs a transfer run by a host thread (cuda with --transport mpi) may wait there for it, within
  // options.timeout_s. In a `timed` iteration the device may start only once every task is
  // launched (the cuda backend holds its streams behind a gate that finish() opens), so that the
  // step is the device's time and the host's launching is measured apart (IterationTimes::launch).
  virtual void begin(const Plan& plan, bool timed) = 0;
  virtual void launch(const Task& task, const std::vector<int>& wait_for) = 0;
  // Waits for both streams. Throws RuntimeFault naming the task each stream was stuck on
  // if `timeout_s` passes first.
  virtual IterationTimes finish(double timeout_s) = 0;

  // What the results file records of how the hardware ran: "key=value" lines (no newline in
  // either), for a prepared plan (communicator, channels, transports, registration, clocks over
  // its timed iterations so far) and for the run (libraries, links). Empty where there is
  // nothing to say (the CPU backend).
  virtual std::vector<std::string> case_facts(const Plan& /*plan*/) { return {}; }
  virtual std::vector<std::string> run_facts() { return {}; }

  // The device's copy engines (the cuda backend's cudaDevAttrAsyncEngineCount), for /system
  // copy_engines; -1 where not known or not a GPU.
  virtual int copy_engines() const { return -1; }
  // The SMs a prepared plan's transfers may take (0 where copy engines or a host thread move
  // the data), for the case's transfer_sms; -1 where not known.
  virtual int transfer_sms(const Plan& /*plan*/) { return -1; }
};

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

// The cuda backend, where it was built (see FOB_CUDA in CMakeLists.txt): a module loaded on
// first use, which needs cuBLAS and NCCL on the library path. Collective over options.comm.
// make_cuda_backend throws InputError when it cannot run (not built, its libraries missing or
// unsupported, no device, two NCCL ranks on one GPU), before allocating anything.
bool cuda_backend_built();
struct CudaStatus {
  bool loaded = false;       // the module and the libraries it needs loaded
  int devices = 0;           // devices the CUDA runtime sees
  std::string error;         // why not loaded, or the CUDA error of counting the devices
  bool gpu_present = false;  // an NVIDIA driver is on this machine (/dev/nvidiactl)
};
CudaStatus cuda_status();
int cuda_device_count();  // 0 when not built, not loadable, or no device is visible
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);
// CUDA runtime, driver, cuBLAS and NCCL versions and where they were found, or why not.
std::string cuda_versions();
// NCCL's version alone ("2.28.9 (/path/libnccl.so.2)"), for /system nccl_version.
std::string nccl_version();

}  // namespace fob
