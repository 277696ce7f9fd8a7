#include "test_kernels.h"

namespace fobmodel_test {
namespace {

constexpr int kThreads = 128;

__global__ void add_kernel(float* dst, const float* src, int count) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += blockDim.x * gridDim.x) {
    dst[i] += src[i];
  }
}

__global__ void __launch_bounds__(kThreads)
    block_sum_kernel(const float* in, float* out, int count) {
  __shared__ float partial[kThreads / 32];
  float value = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) value += in[i];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x < 32) {
    value = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
      value += __shfl_down_sync(0xffffffffu, value, offset);
    if (threadIdx.x == 0) *out = value;
  }
}

__global__ void write_index_kernel(float* data, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = static_cast<float>(i);
}

}  // namespace

cudaError_t add(float* dst, const float* src, int count, cudaStream_t stream) {
  FOB_LAUNCH(add_kernel, 2, 64, 0, stream)(dst, src, count);
  return cudaGetLastError();
}

cudaError_t block_sum(const float* in, float* out, int count, cudaStream_t stream) {
  FOB_LAUNCH(block_sum_kernel, 1, kThreads, 0, stream)(in, out, count);
  return cudaGetLastError();
}

cudaError_t write_index(float* data, int count, cudaStream_t stream) {
  FOB_LAUNCH(write_index_kernel, (count + 63) / 64, 64, 0, stream)(data, count);
  return cudaGetLastError();
}

bool traced() {
  return fobmodel::kernel::kTraced;
}

}  // namespace fobmodel_test
