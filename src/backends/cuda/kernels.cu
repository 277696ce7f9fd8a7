#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels.h"

namespace fob::cuda {
namespace {

// What the sum is formed in: fp32 for every type but fp64.
template <typename T>
struct Accumulator {
  using type = float;
};
template <>
struct Accumulator<double> {
  using type = double;
};

template <typename T>
__global__ void add_kernel(T* dst, const T* src, int64_t count) {
  using Acc = typename Accumulator<T>::type;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = static_cast<T>(static_cast<Acc>(dst[i]) + static_cast<Acc>(src[i]));
  }
}

template <typename T>
cudaError_t launch_add(void* dst, const void* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  // Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
  const int64_t wanted = (count + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
  add_kernel<T>
      <<<blocks, kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), count);
  return cudaGetLastError();
}

}  // namespace

cudaError_t add(DType dtype, void* dst, const void* src, int64_t count, cudaStream_t stream) {
  switch (dtype) {
    case DType::fp32:
      return launch_add<float>(dst, src, count, stream);
    case DType::fp64:
      return launch_add<double>(dst, src, count, stream);
    case DType::bf16:
      return launch_add<__nv_bfloat16>(dst, src, count, stream);
    case DType::fp16:
      return launch_add<__half>(dst, src, count, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace fob::cuda
