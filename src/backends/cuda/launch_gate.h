// Holds a timed iteration's device work until the host has launched all of it, so that its
// step time is the GPU's and not the host's launching (nvbench holds its timed kernels behind a
// "blocking kernel" for the same reason; nccl-tests times a loop of launches instead). The
// compute stream waits on a 32-bit flag in mapped pinned memory (cuStreamWaitValue32: a stream
// memory operation, which takes no SM while it waits), the comm stream forks from it after, and
// the iteration's origin is recorded behind the wait; open() writes the flag once the last task
// is launched.
//
// A launch can block the host while the streams wait (a stream's queue of pending work is
// finite), which would hold the gate shut for good: a keeper thread opens it after kLimit and
// the iteration says so (IterationTimes::gate_early).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "cuda_util.h"

namespace fob {

class LaunchGate {
 public:
  explicit LaunchGate(const Checker& check);
  ~LaunchGate();
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;

  // Why there is no gate ("" when there is): the driver lacks stream memory operations.
  const std::string& unavailable() const { return why_; }
  // Queues the wait on `stream`; work queued on it after waits until open().
  void close(cudaStream_t stream);
  // Lets the waiting work start; whether the keeper had opened it already.
  bool open();

  // How long the keeper lets a gate stay shut.
  static constexpr double kLimitSeconds = 2.0;
  // The most operations an eager iteration may queue on one stream behind the gate. CUDA
  // documents no depth for a stream's queue; launches have been reported to block at about a
  // thousand pending ones, and nvbench queues at most a few dozen behind its blocking kernel.
  // A plan past this is not held (a graph, one launch, always is).
  static constexpr int kMaxQueued = 512;

 private:
  void keep();

  Checker check_;
  std::string why_;
  using WaitFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  WaitFn wait_ = nullptr;
  uint32_t* flag_ = nullptr;  // mapped pinned memory the host writes
  CUdeviceptr device_flag_ = 0;
  uint32_t generation_ = 0;  // the value the current wait awaits
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, quit_ = false, opened_by_keeper_ = false;
  std::thread keeper_;
};

}  // namespace fob
