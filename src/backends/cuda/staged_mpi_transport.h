// The cuda backend's host-staged transport (--transport mpi): each transfer is copied to pinned
// host memory, sent over MPI on a host thread (the CPU backend's Link and ring collectives, with
// its link emulation) and copied back, so several ranks can share one GPU and clusters without
// NCCL still run.
//
// A compute task that needs a transfer is launched only once the host thread has finished it
// (wait_for_host, bounded by --timeout): nothing on the GPU ever waits for host work, which CUDA
// forbids host functions to do and which could otherwise serialise behind a blocked callback.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "backends/host/cpu_stream.h"
#include "backends/host/link.h"
#include "cuda_util.h"
#include "fob/backend.h"
#include "transport.h"

namespace fob {

class StagedMpiTransport : public Transport {
 public:
  // Collective over options.comm (the link's clocks). Copies run on a stream of
  // `stream_priority` on `device`, which the host thread works on; `mem_pitch` is the largest
  // pitch cudaMemcpy2DAsync takes.
  StagedMpiTransport(const BackendOptions& options, int device, int stream_priority,
                     size_t mem_pitch, const Checker& check);
  ~StagedMpiTransport() override;

  std::string name() const override { return "mpi"; }
  // Host-staged transfers run on a host thread, aligned with the GPU at each iteration start.
  std::string host_timer() const override { return "host steady_clock for staged transfers"; }
  // The host thread waits for GPU work with these events: blocking, not spinning, so that it
  // leaves the CPU to the ranks sharing it.
  unsigned event_flags() const override { return cudaEventBlockingSync; }
  void* allocate(size_t bytes) override;
  void free(void* ptr) override { cudaFree(ptr); }
  void prepare(const Plan& plan, Prepared& p) override;

  void begin(const PlanBuffers& buffers) override;
  void origin_recorded(cudaEvent_t origin, double host_before) override;
  double host_alignment() const override { return t0_uncertainty_; }
  void enqueue(const Task& t, cudaStream_t stream) override;

  bool runs_on_host(const Task& t) const override { return t.stream == StreamId::comm; }
  // Its copies are cudaMemcpy on the copy engines and MPI on a host thread: no SMs.
  int transfer_sms(const Prepared& /*p*/) const override { return 0; }
  void launch_on_host(const Task& t, const std::vector<int>& wait_for) override;
  bool wait_for_host(int task, double timeout_s) override;
  double host_start(int task) const override { return host_start_[task]; }
  double host_end(int task) const override { return host_end_[task]; }
  std::string host_state() const override { return link_->state(); }
  bool host_busy() override;

  void abort() override;
  void stop() override;

 private:
  void run(const Task& t, const std::vector<int>& wait_for);
  void run_unchecked(const Task& t, const std::vector<int>& wait_for);
  void collective(const Task& t, MPI_Datatype type);
  template <typename T, typename Add>
  void reduce(const Task& t, MPI_Datatype type, Add add);
  void to_host(const View& v);
  void to_device(const View& v);
  // Every rank's block of `v`, `stride` rows apart, to or from the host mirror; a block is
  // `batch` chunks `step` rows apart.
  void stage_blocks(const View& v, int64_t stride, int batch, int64_t step, cudaMemcpyKind kind);
  // The rows of `buffer` every list's spans cover (an all-to-all's blocks), to or from the host
  // mirror: evenly spaced spans one pitched copy, others one copy each.
  void stage_spans(int buffer, const std::vector<std::vector<RowSpan>>& lists, cudaMemcpyKind kind);

  Checker check_;
  size_t mem_pitch_ = 0;  // the largest pitch cudaMemcpy2DAsync takes
  cudaStream_t copy_ = nullptr;
  std::atomic<bool> abort_{false};
  std::unique_ptr<Link> link_;
  std::unique_ptr<CpuStream> host_comm_;
  PlanBuffers at_;
  double t0_host_ = 0;
  double t0_uncertainty_ = 0;  // how late t0_host_ may be (origin_recorded)
  std::vector<double> host_start_, host_end_;
  std::vector<char> host_done_;
  std::mutex flag_mu_;
  std::condition_variable flag_cv_;
  std::string error_;  // a fault on the host thread, rethrown on the launching thread
};

}  // namespace fob
