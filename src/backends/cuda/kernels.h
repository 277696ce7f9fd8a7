// The kernels the cuda backend needs besides cuBLAS: element-wise accumulation for the `add`
// task, the row softmax for the `softmax` task and the input generator.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "fob/input_hash.h"
#include "fob/types.h"

namespace fob::cuda {

// dst[i] += src[i] for `count` elements of `dtype` (16-bit types add in fp32), on `stream`.
cudaError_t add(DType dtype, void* dst, const void* src, int64_t count, cudaStream_t stream);

// Each of `rows` rows of `cols` elements, starting `ld` elements apart at `data` (a row's first
// element), becomes softmax(scale * row) in place, on `stream`. fp32, bf16 and fp16 are
// computed in fp32, fp64 in fp64; the row maximum is subtracted before exp().
cudaError_t softmax(DType dtype, void* data, int64_t rows, int64_t cols, int64_t ld, double scale,
                    cudaStream_t stream);

// Writes the input region `fill` (fill.rows x fill.cols elements of `elem_bytes` bytes, row-major)
// at `dst` on `stream`: element (i, j) is input_element(fill, i, j) stored as its bits in
// `encoding` (input_hash.h), the same math the host's fill_input() runs.
cudaError_t fill_input(void* dst, int elem_bytes, const InputFill& fill,
                       const InputEncoding& encoding, cudaStream_t stream);

}  // namespace fob::cuda
