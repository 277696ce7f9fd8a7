#include "launch_gate.h"

#include <dlfcn.h>

#include <chrono>

namespace fob {

LaunchGate::LaunchGate(const Checker& check) : check_(check) {
  // The runtime is linked statically and does not expose stream memory operations: they are
  // the driver's (cuda.h, "Stream Memory Operations"), which the process has loaded already.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) wait_ = reinterpret_cast<WaitFn>(dlsym(driver, "cuStreamWaitValue32_v2"));
  if (!wait_) {
    why_ =
        "the CUDA driver has no cuStreamWaitValue32_v2: timed iterations start as they are "
        "launched";
    return;
  }
  void* host = nullptr;
  check_.cuda(cudaHostAlloc(&host, 64, cudaHostAllocMapped), "allocating the launch gate's flag");
  flag_ = static_cast<uint32_t*>(host);
  __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
  void* device = nullptr;
  check_.cuda(cudaHostGetDevicePointer(&device, host, 0), "mapping the launch gate's flag");
  device_flag_ = reinterpret_cast<CUdeviceptr>(device);
  keeper_ = std::thread([this] { keep(); });
}

LaunchGate::~LaunchGate() {
  if (keeper_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    keeper_.join();
  }
  // A gate left shut would hold its stream for good: open it before the memory goes.
  if (flag_) {
    __atomic_store_n(flag_, generation_, __ATOMIC_RELEASE);
    cudaFreeHost(flag_);
  }
}

void LaunchGate::close(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  // Cyclic greater-or-equal: the flag reaches this generation when the gate opens.
  const CUresult r = wait_(reinterpret_cast<CUstream>(stream), device_flag_, generation_,
                           CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS)
    check_.fail("cuStreamWaitValue32 (the launch gate)", "CUresult " + std::to_string(r));
  armed_ = true;
  opened_by_keeper_ = false;
  cv_.notify_all();
}

bool LaunchGate::open() {
  std::lock_guard<std::mutex> lock(mu_);
  if (armed_) {
    __atomic_store_n(flag_, generation_, __ATOMIC_RELEASE);
    armed_ = false;
    cv_.notify_all();
  }
  return opened_by_keeper_;
}

void LaunchGate::keep() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    cv_.wait(lock, [this] { return armed_ || quit_; });
    if (quit_) break;
    const uint32_t generation = generation_;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(kLimitSeconds);
    const bool disarmed = cv_.wait_until(
        lock, deadline, [&] { return quit_ || !armed_ || generation_ != generation; });
    if (!disarmed && armed_) {
      __atomic_store_n(flag_, generation_, __ATOMIC_RELEASE);
      armed_ = false;
      opened_by_keeper_ = true;
    }
  }
}

}  // namespace fob
