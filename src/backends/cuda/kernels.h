// The one kernel the cuda backend needs: element-wise accumulation for the `add` task.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "fob/types.h"

namespace fob::cuda {

// dst[i] += src[i] for `count` elements of `dtype` (16-bit types add in fp32), on `stream`.
cudaError_t add(DType dtype, void* dst, const void* src, int64_t count, cudaStream_t stream);

}  // namespace fob::cuda
