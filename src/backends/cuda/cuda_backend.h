// The cuda backend: cuBLAS GEMMs on a compute stream, NCCL point-to-point and collectives on a
// higher-priority comm stream, one cudaEvent per dependency and two timing events per task.
// `--transport mpi` stages transfers through host memory on a host thread instead, so that
// several ranks can share one GPU and clusters without NCCL still run.
//
// With --transport mpi a compute task that needs a transfer is launched only once the host
// thread has finished it (launch() waits, bounded by --timeout): nothing on the GPU ever waits
// for host work, which CUDA forbids host functions to do and which could otherwise serialise
// behind a blocked callback.
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
// Files: cuda_backend.cpp (streams, events, buffers, GEMMs, iterations), nccl_ops.cpp (NCCL
// exchanges and collectives, loopback included), staged.cpp (--transport mpi), module.cpp (the
// module's entry point, library checks and versions).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../host/cpu_stream.h"
#include "../host/link.h"
#include "cuda_util.h"
#include "cupti_timer.h"
#include "fob/backend.h"

namespace fob {

// A plan's device buffers, host mirrors for staged transfers, events and captured graph.
struct Prepared {
  std::vector<void*> device;
  void* stage = nullptr;    // device scratch for collectives that need a contiguous copy
  std::vector<void*> host;  // pinned mirrors, only for --transport mpi
  void* host_scratch[2] = {nullptr, nullptr};
  std::vector<cudaEvent_t> done, start, end;
  cudaGraphExec_t graph = nullptr;
  int eager_runs = 0;      // iterations run before capturing a graph
  uint64_t nvtx_case = 0;  // the case's NVTX range, from setup() to release()
  bool overlaps = false;   // plan_overlaps(): its GEMMs leave comm_sms_ SMs to NCCL
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string transport() const override { return staged_ ? "mpi" : "nccl"; }
  std::string timer() const override;
  std::string device() const override;
  std::string blas() const override;

  int64_t bytes_needed(const Plan& plan) const override;
  int64_t bytes_free() const override;

  void setup(const Plan& plan) override;
  void release(const Plan& plan) override;
  void poison(const Plan& plan) override;
  std::vector<double> read(const Plan& plan, int buffer) override;

  void begin(const Plan& plan) override;
  void launch(const Task& task, const std::vector<int>& wait_for) override;
  IterationTimes finish(double timeout_s) override;

 private:
  // cuda_backend.cpp
  void select_and_check_device();
  void create_nccl_communicator();
  Prepared& prepared(const Plan& plan);
  void release_prepared(Prepared& p);
  void allocate_mirrors(const Plan& plan, Prepared& p);
  void fill_inputs(const Plan& plan, Prepared& p);
  void enqueue(const Task& t, cudaStream_t stream);
  void gemm(const Task& t);
  void record_timing(cudaEvent_t event, cudaStream_t stream);
  void wait_for_iteration(double timeout_s);
  std::string stuck_tasks() const;
  void abort_comm();

  // timing.cpp
  void start_cupti();
  void mark_origin();
  IterationTimes read_times();
  static IterationTimes finish_times(IterationTimes& times);
  bool event_times(IterationTimes& times);
  uint64_t cupti_id(int task) const { return (iteration_seq_ << 32) + 1 + task; }

  // nccl_ops.cpp
  static int64_t stage_elements(const Plan& plan);
  void exchange(const Task& t, cudaStream_t stream);
  void collective(const Task& t, cudaStream_t stream);
  void all_gather(const Task& t, cudaStream_t stream);
  void reduce_scatter(const Task& t, cudaStream_t stream);
  int nccl_peer(int peer) const { return options_.loopback ? 0 : peer; }
  // `count` blocks of `width` bytes, `src_pitch` apart, to `dst_pitch` apart, on `stream`.
  void copy_blocks(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                   int count, cudaStream_t stream, const char* what);

  // staged.cpp
  void run_staged(const Task& t, const std::vector<int>& wait_for);
  void run_staged_unchecked(const Task& t, const std::vector<int>& wait_for);
  void staged_collective(const Task& t, MPI_Datatype type);
  template <typename T, typename Add>
  void staged_reduce(const Task& t, MPI_Datatype type, Add add);
  void to_host(const View& v);
  void to_device(const View& v);
  void wait_for_staged(int dep, const Task& task);

  // Buffer addresses: a view's first element (row and column offset), `extra_rows` further
  // down. Host mirrors have the device buffers' layout.
  int64_t cols(int buffer) const { return plan_->buffers[buffer].cols; }
  int elem() const { return dtype_bytes(plan_->dtype); }
  int64_t count(const View& v) const { return v.rows * cols(v.buffer); }
  int64_t offset_bytes(const View& v, int64_t extra_rows) const;
  void* device_at(const View& v, int64_t extra_rows = 0) const;
  void* host_at(const View& v, int64_t extra_rows = 0) const;
  // `v` moved down by `rows` rows, every other field kept.
  static View shifted(View v, int64_t rows) {
    v.row += rows;
    return v;
  }

  BackendOptions options_;
  Checker check_;
  int rank_ = 0, world_ = 1;
  bool staged_ = false;
  int device_ = 0;
  std::string device_name_, bus_id_;
  int sm_count_ = 0;
  // SMs the GEMMs of overlapping plans leave to NCCL (--comm-sms, resolved), and the cuBLAS
  // SM target in force (0: every SM).
  int comm_sms_ = 0;
  int sm_target_ = 0;
  void resolve_comm_sms();
  size_t mem_pitch_ = 0;  // the largest pitch cudaMemcpy2DAsync accepts
  cudaStream_t compute_ = nullptr, comm_ = nullptr, copy_ = nullptr;
  cudaEvent_t it0_ = nullptr;   // the iteration's time origin
  cudaEvent_t fork_ = nullptr;  // orders the comm stream after the iteration's start
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  ncclComm_t nccl_ = nullptr;
  std::atomic<bool> abort_{false};
  std::unique_ptr<Link> link_;
  std::unique_ptr<CpuStream> host_comm_;

  std::map<const Plan*, Prepared> prepared_;
  const Plan* plan_ = nullptr;
  Prepared* current_ = nullptr;
  bool capturing_ = false, replaying_ = false;
  // CUPTI kernel activity times the tasks (timing.cpp); null where CUPTI is missing or fails,
  // and not used for graph replays, whose kernels carry no per-task correlation.
  std::unique_ptr<CuptiTimer> cupti_;
  bool cupti_on_ = false;  // this iteration's tasks are tagged
  uint64_t iteration_seq_ = 0;
  void* origin_ = nullptr;  // one device byte the origin marker sets
  std::string timer_note_;  // why an iteration fell back to the event timer, said once
  // Between begin() and a finish() that returned: an iteration that never finished may have
  // NCCL kernels waiting for a peer, which only aborting the communicator ends.
  bool in_iteration_ = false;
  double t0_host_ = 0;
  std::vector<double> host_start_, host_end_;
  std::vector<char> host_done_;
  std::mutex flag_mu_;
  std::condition_variable flag_cv_;
  std::string staged_error_;  // a fault on the host thread, rethrown on the launching thread
};

}  // namespace fob
