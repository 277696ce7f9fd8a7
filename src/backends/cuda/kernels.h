// The kernels the cuda backend needs besides cuBLAS: element-wise accumulation for the `add`
// task and the row softmax for the `softmax` task.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "fob/types.h"

namespace fob::cuda {

// dst[i] += src[i] for `count` elements of `dtype` (16-bit types add in fp32), on `stream`.
cudaError_t add(DType dtype, void* dst, const void* src, int64_t count, cudaStream_t stream);

// Each of `rows` rows of `cols` elements, starting `ld` elements apart at `data` (a row's first
// element), becomes softmax(scale * row) in place, on `stream`. fp32, bf16 and fp16 are
// computed in fp32, fp64 in fp64; the row maximum is subtracted before exp().
cudaError_t softmax(DType dtype, void* data, int64_t rows, int64_t cols, int64_t ld, double scale,
                    cudaStream_t stream);

}  // namespace fob::cuda
