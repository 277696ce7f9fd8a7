// Force-included (-include fobmodel/device.h) when a .cu file is compiled for the cuda model as
// C++ by the host compiler: the CUDA C++ language extensions the kernels use, run on the CPU.
// A launch queues the kernel on its stream as an Op; when it runs, every block's threads run as
// fibers on the stream's thread, __syncthreads() and the warp shuffles being fiber barriers.
// Compiled with clang's -fsanitize-coverage=trace-loads,trace-stores, every load and store the
// kernel makes is bounds- and race-checked as it runs; otherwise each pointer argument's whole
// allocation is taken as read (and, when not const, written).
//
// Launches are written FOB_LAUNCH(kernel, grid, block, shmem, stream)(args...), which is
// kernel<<<grid, block, shmem, stream>>>(args...) under nvcc.
#pragma once

#ifndef __CUDACC__

// Before the CUDA headers, which define these only where they are not yet defined. Shared
// memory is per block; the blocks of a launch run one after another on the stream's thread.
#define __shared__ static thread_local
#define __launch_bounds__(...)

#include <cuda_runtime.h>
#include <math.h>

#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fobmodel/model.h"

namespace fobmodel::kernel {

// The running fiber's CUDA thread.
struct Position {
  uint3 thread;
  uint3 block;
  dim3 block_dim;
  dim3 grid_dim;
};
const Position& position();

// __syncthreads: every thread of the block arrives before any leaves.
void sync_block();
// One warp shuffle: this lane offers `bytes` of `mine`; after every lane of the warp has,
// `out` gets the offer of lane `source` (or its own where source is outside the warp).
void warp_exchange(const void* mine, void* out, size_t bytes, int source);

#if defined(__has_feature)
#if __has_feature(coverage_sanitizer)
#define FOB_MODEL_TRACED_KERNELS 1
#endif
#endif
#ifdef FOB_MODEL_TRACED_KERNELS
inline constexpr bool kTraced = true;
#else
inline constexpr bool kTraced = false;
#endif

// Without traced accesses: the whole allocation a pointer argument points into.
void add_argument_footprint(std::vector<Footprint>& footprint, const void* pointer, bool write);

// Validates the configuration (cudaErrorInvalidConfiguration, recorded for cudaGetLastError as
// a real launch error is) and enqueues the op running `thread_body` for every thread.
// `traced`: the kernel's file was compiled with sanitizer coverage (kTraced there).
void launch(const char* name, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
            std::function<void()> thread_body, std::vector<Footprint> footprint, bool traced);

template <typename T>
void add_argument(std::vector<Footprint>& footprint, const T& argument) {
  if constexpr (std::is_pointer_v<T>) {
    constexpr bool write = !std::is_const_v<std::remove_pointer_t<T>>;
    add_argument_footprint(footprint, static_cast<const void*>(argument), write);
  }
}

}  // namespace fobmodel::kernel

namespace fobmodel {

template <typename... Params, typename... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shmem,
            cudaStream_t stream, Args&&... args) {
  auto arguments =
      std::make_shared<std::tuple<std::decay_t<Params>...>>(std::forward<Args>(args)...);
  std::vector<Footprint> footprint;
  if constexpr (!kernel::kTraced) {
    std::apply([&](const auto&... a) { (kernel::add_argument(footprint, a), ...); }, *arguments);
  }
  auto body = [kernel, arguments] { std::apply(kernel, *arguments); };
  kernel::launch(name, grid, block, shmem, stream, body, std::move(footprint), kernel::kTraced);
}

template <typename Kernel>
auto launcher(const char* name, Kernel kernel, dim3 grid, dim3 block, size_t shmem,
              cudaStream_t stream) {
  return [=](auto&&... args) {
    launch(name, kernel, grid, block, shmem, stream, std::forward<decltype(args)>(args)...);
  };
}

}  // namespace fobmodel

#define FOB_LAUNCH(kernel, grid, block, shmem, stream) \
  ::fobmodel::launcher("kernel " #kernel, kernel, grid, block, shmem, stream)

#define threadIdx (::fobmodel::kernel::position().thread)
#define blockIdx (::fobmodel::kernel::position().block)
#define blockDim (::fobmodel::kernel::position().block_dim)
#define gridDim (::fobmodel::kernel::position().grid_dim)

inline void __syncthreads() {
  ::fobmodel::kernel::sync_block();
}

// The warp shuffles with a full mask, as kernels.cu uses them (CUDA C++ Programming Guide,
// "Warp Shuffle Functions"): every lane of the warp must take part.
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  (void)mask;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int source = (lane & ~(width - 1)) + ((lane ^ lane_mask) & (width - 1));
  T out = value;
  ::fobmodel::kernel::warp_exchange(&value, &out, sizeof(T), source);
  return out;
}

template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  (void)mask;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int in_segment = lane % width + static_cast<int>(delta);
  const int source = in_segment < width ? lane + static_cast<int>(delta) : lane;
  T out = value;
  ::fobmodel::kernel::warp_exchange(&value, &out, sizeof(T), source);
  return out;
}

#endif  // __CUDACC__
