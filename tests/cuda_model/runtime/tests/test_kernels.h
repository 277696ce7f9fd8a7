// Kernels of the runtime model's tests, compiled as the cuda backend's kernels.cu is for the
// model (device.h forced in, sanitizer coverage where clang++ is found).
#pragma once

#include <cuda_runtime_api.h>

namespace fobmodel_test {

// dst[i] += src[i] for i < count (a grid-stride loop).
cudaError_t add(float* dst, const float* src, int count, cudaStream_t stream);
// out[0] = the sum of in[0..count) with one block: warp shuffles, shared memory, __syncthreads.
cudaError_t block_sum(const float* in, float* out, int count, cudaStream_t stream);
// Writes data[i] = i for i < count, with no bounds check against the allocation.
cudaError_t write_index(float* data, int count, cudaStream_t stream);
// Whether this file was compiled with traced accesses.
bool traced();

}  // namespace fobmodel_test
