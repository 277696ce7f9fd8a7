// The cuda backend: cuBLAS GEMMs on a compute stream, transfers on a higher-priority comm
// stream, one cudaEvent per dependency and two timing events per task. The transfers are a
// Transport's (transport.h), chosen once when the backend is made: NCCL point-to-point and
// collectives, or with `--transport mpi` transfers staged through host memory on a host thread,
// so that several ranks can share one GPU and clusters without NCCL still run.
//
// Launch order and the cross-rank deadlock. Transformer Engine launches a tiny delay kernel so
// that a GEMM queued before an exchange on another stream cannot starve the exchange of SMs
// while the peer waits for it. Here every rank launches its tasks in plan order, which is the
// same order on every rank and independent of host timing, and a plan's transfers never wait
// for a GEMM that is launched after them: the PlanBuilder only makes a task depend on earlier
// tasks. NCCL kernels run on the higher-priority comm stream, so once launched they are
// scheduled ahead of queued GEMM blocks; a GEMM that is already running leaves SMs free as its
// blocks retire, and the peer's matching transfer is launched in the same plan position, so
// both sides of every exchange are in flight together and neither waits for host timing.
//
// What every strategy gets alike (docs/fairness.md): plans whose transfers never
// overlap a GEMM move data on NCCL's uncapped communicator and run their GEMMs on every SM;
// overlapping plans move theirs on a communicator capped at --comm-sms CTAs, and a GEMM that
// may run beside a transfer leaves those SMs free (cuBLAS's SM target, set per GEMM); every plan
// buffer is registered with NCCL; a timed iteration's work waits behind a gate until the last
// launch (launch_gate.h), and runs on data like a trained layer's; where CUPTI times the tasks no
// per-task timing events are recorded; NVML samples clocks, power and temperature.
//
// Files: cuda_backend.cpp (streams, iterations, what the file records), cuda_tasks.cpp (GEMMs
// and kernels), cuda_setup.cpp (device choice), timing.cpp (task times), cuda_buffers.cpp (a
// plan's memory and view addresses), nccl_transport.cpp (NCCL exchanges and collectives,
// loopback included), staged_mpi_transport.cpp (--transport mpi), launch_gate.cpp,
// gpu_monitor.cpp (NVML), module.cpp (the module's entry point, library checks and versions).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda_buffers.h"
#include "cuda_util.h"
#include "cupti_timer.h"
#include "fob/backend.h"
#include "gpu_monitor.h"
#include "launch_gate.h"
#include "transport.h"

namespace fob {

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string transport() const override { return transport_->name(); }
  std::string timer() const override;
  // timer()'s text for a device timer, with the host timer of host-run transfers.
  std::string timer_named(const char* device_timer) const;
  std::string device() const override;
  std::string blas() const override;

  int64_t bytes_needed(const Plan& plan) const override;
  int64_t bytes_free() const override;

  void setup(const Plan& plan) override;
  void release(const Plan& plan) override;
  void poison(const Plan& plan) override;
  std::vector<double> read(const Plan& plan, int buffer) override;

  void fill_timing_data(const Plan& plan) override;
  void begin(const Plan& plan, bool timed) override;
  void launch(const Task& task, const std::vector<int>& wait_for) override;
  IterationTimes finish(double timeout_s) override;
  std::vector<std::string> case_facts(const Plan& plan) override;
  std::vector<std::string> run_facts() override;
  int copy_engines() const override { return copy_engines_; }
  int transfer_sms(const Plan& plan) override;

 private:
  // cuda_backend.cpp
  Prepared& prepared(const Plan& plan);
  PlanBuffers buffers() const { return PlanBuffers(*plan_, *current_); }
  void record_timing(cudaEvent_t event, cudaStream_t stream);
  // The iteration's start on the device: behind the gate where it is held, then the origin.
  void start_iteration();
  void end_capture();
  // NVML's window over the timed iterations of the plan in progress, merged into its record.
  void stop_monitor();
  void release_memory(Prepared& p);
  std::string gate_text(const Prepared& p) const;

  // cuda_tasks.cpp
  void configure_math();
  void enqueue(const Task& t, cudaStream_t stream);
  void gemm(const Task& t);
  void set_sm_target(int target);
  void wait_for_iteration(double timeout_s);
  // Aborts the iteration and throws: it did not finish within `timeout_s`; `what` says where
  // the launch waited, if it did.
  [[noreturn]] void timed_out(double timeout_s, const std::string& what);
  std::string stuck_tasks() const;
  void abort_comm();

  // cuda_setup.cpp. NCCL needs a GPU per rank (`one_gpu_per_rank`) and SMs to run on
  // (`uses_sms`); the host-staged transport needs neither.
  void select_and_check_device(bool one_gpu_per_rank);
  void resolve_comm_sms(bool uses_sms);

  // timing.cpp
  void start_cupti();
  void mark_origin();
  IterationTimes read_times();
  static IterationTimes finish_times(IterationTimes& times);
  void event_times(IterationTimes& times);
  // CUPTI's times of the iteration into `times`; why not, or "".
  std::string cupti_times(IterationTimes& times);
  uint64_t cupti_id(int task) const { return (iteration_seq_ << 32) + 1 + task; }

  BackendOptions options_;
  Checker check_;
  int rank_ = 0, world_ = 1;
  int device_ = 0;
  std::string device_name_, bus_id_;
  // The device is the cuda model (tests/cuda_model), as its properties say: every timer is then
  // labelled as the CPU's.
  bool on_model_ = false;
  int sm_count_ = 0;
  int copy_engines_ = -1;  // cudaDevAttrAsyncEngineCount, whatever the transport
  // SMs the GEMMs of overlapping plans leave to NCCL (--comm-sms, resolved), and the cuBLAS
  // SM target in force (0: every SM).
  int comm_sms_ = 0;
  int sm_target_ = 0;
  size_t mem_pitch_ = 0;  // the largest pitch cudaMemcpy2DAsync accepts
  cudaStream_t compute_ = nullptr, comm_ = nullptr;
  cudaEvent_t it0_ = nullptr;   // the iteration's time origin
  cudaEvent_t fork_ = nullptr;  // orders the comm stream after the iteration's start
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  std::unique_ptr<Transport> transport_;

  std::map<const Plan*, Prepared> prepared_;
  const Plan* plan_ = nullptr;
  Prepared* current_ = nullptr;
  bool capturing_ = false, replaying_ = false;
  // CUPTI kernel activity times the tasks (timing.cpp); null where CUPTI is missing or fails,
  // and not used for graph replays, whose kernels carry no per-task correlation.
  std::unique_ptr<CuptiTimer> cupti_;
  uint64_t iteration_seq_ = 0;
  void* origin_ = nullptr;  // one device byte the origin marker sets
  // Recorded after the origin marker: brackets, on the event clock, when CUPTI's origin ran.
  cudaEvent_t origin_end_ = nullptr;
  std::string timer_note_;  // why an iteration fell back to the event timer, said once
  // This iteration records per-task timing events: where CUPTI does not time the tasks, or its
  // plan lost an iteration's kernel records before (Prepared::events).
  bool events_on_ = true;
  bool timed_ = false;  // the iteration in progress is timed: gated, monitored
  bool gated_ = false;  // its work waits behind the gate
  double launch_start_ = 0;
  std::unique_ptr<LaunchGate> gate_;
  std::unique_ptr<GpuMonitor> monitor_;
  Prepared* monitored_ = nullptr;         // the plan whose timed iterations NVML samples
  std::vector<std::string> node_peers_;   // bus ids of the other ranks' GPUs on this host
  std::vector<std::string> setup_notes_;  // what the run records of its setup (run_facts)
  // Between begin() and a finish() that returned: an iteration that never finished may have
  // NCCL kernels waiting for a peer, which only aborting the communicator ends.
  bool in_iteration_ = false;
};

}  // namespace fob
