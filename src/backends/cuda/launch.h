// How kernels.cu launches its kernels. Under nvcc, FOB_LAUNCH(kernel, grid, block, shmem,
// stream)(args...) is kernel<<<grid, block, shmem, stream>>>(args...). The cuda model
// (tests/cuda_model) compiles the very same kernels.cu with the host compiler, where `<<<>>>`
// does not parse: there it queues the kernel on the model's stream, which runs each block's
// threads as fibers (fobmodel/device.h, force-included by that build), so the model runs these
// kernels and never a second copy of them.
#pragma once

#if defined(__CUDACC__)
#define FOB_LAUNCH(kernel, grid, block, shmem, stream) kernel<<<grid, block, shmem, stream>>>
#else
#include <cstddef>
#include <utility>

namespace fob::cuda::detail {
template <typename Kernel>
struct ModelLaunch {
  Kernel kernel;
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
  template <typename... Args>
  void operator()(Args&&... args) const {
    ::fobmodel::launch(kernel, grid, block, shmem, stream, std::forward<Args>(args)...);
  }
};
}  // namespace fob::cuda::detail
#define FOB_LAUNCH(kernel, grid, block, shmem, stream)  \
  ::fob::cuda::detail::ModelLaunch<decltype(&kernel)> { \
    &kernel, dim3(grid), dim3(block), shmem, stream     \
  }
#endif
