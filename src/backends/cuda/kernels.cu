#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels.h"
#include "launch.h"

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
  FOB_LAUNCH(add_kernel<T>, blocks, kThreads, 0, stream)
  (static_cast<T*>(dst), static_cast<const T*>(src), count);
  return cudaGetLastError();
}

// softmax: one block of kSoftmaxThreads threads per row; blocks stride over the rows.
constexpr int kSoftmaxThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxSoftmaxBlocks = 1 << 16;  // far more than are ever resident at once

__device__ inline float exp_of(float x) {
  return expf(x);
}
__device__ inline double exp_of(double x) {
  return exp(x);
}

struct Max {
  template <typename Acc>
  __device__ Acc operator()(Acc x, Acc y) const {
    return y > x ? y : x;
  }
};
struct Sum {
  template <typename Acc>
  __device__ Acc operator()(Acc x, Acc y) const {
    return x + y;
  }
};

// Every thread of the block gets op over the block's values. `partial` holds one value per
// warp; the trailing barrier lets the next reduction reuse it.
template <typename Acc, typename Op>
__device__ Acc block_reduce(Acc value, Op op, Acc identity, Acc* partial) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  value = lane < warps ? partial[lane] : identity;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  __syncthreads();
  return value;
}

// Row r (rows of `cols` elements, `ld` apart from `data`) becomes softmax(scale * row): the
// row's maximum of scale * x is subtracted before exp() so that it cannot overflow.
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    softmax_kernel(T* data, int64_t rows, int64_t cols, int64_t ld, double scale_in) {
  using Acc = typename Accumulator<T>::type;
  __shared__ Acc partial[kSoftmaxThreads / kWarp];
  const Acc scale = static_cast<Acc>(scale_in);
  const Acc lowest = -static_cast<Acc>(INFINITY);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T* row = data + r * ld;
    Acc max = lowest;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      max = Max{}(max, scale * static_cast<Acc>(row[j]));
    }
    max = block_reduce(max, Max{}, lowest, partial);
    Acc sum = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      sum += exp_of(scale * static_cast<Acc>(row[j]) - max);
    }
    sum = block_reduce(sum, Sum{}, Acc(0), partial);
    // Each thread rewrites only the elements it read, so no barrier is needed before this.
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      row[j] = static_cast<T>(exp_of(scale * static_cast<Acc>(row[j]) - max) / sum);
    }
  }
}

template <typename T>
cudaError_t launch_softmax(void* data, int64_t rows, int64_t cols, int64_t ld, double scale,
                           cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (ld < cols) return cudaErrorInvalidValue;
  const int blocks = static_cast<int>(rows < kMaxSoftmaxBlocks ? rows : kMaxSoftmaxBlocks);
  FOB_LAUNCH(softmax_kernel<T>, blocks, kSoftmaxThreads, 0, stream)
  (static_cast<T*>(data), rows, cols, ld, scale);
  return cudaGetLastError();
}

// Input fills: the thread bodies and the grid are input_hash.h's, which the unit tests run on
// the host.
__device__ FillThread this_fill_thread() {
  return {.first_col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
          .col_stride = static_cast<int64_t>(blockDim.x) * gridDim.x,
          .first_row = blockIdx.y,
          .row_stride = gridDim.y};
}

template <typename Bits>
__global__ void __launch_bounds__(kInputFillThreads)
    fill_dense_kernel(Bits* out, InputFill f, InputEncoding encoding) {
  fill_dense_thread(out, f, encoding, this_fill_thread());
}

template <typename Bits>
__global__ void __launch_bounds__(kInputFillThreads)
    fill_selection_kernel(Bits* out, InputFill f, InputEncoding encoding) {
  fill_selection_thread(out, f, encoding, this_fill_thread());
}

template <typename Bits>
cudaError_t launch_fill(void* dst, const InputFill& f, const InputEncoding& encoding,
                        cudaStream_t stream) {
  if (f.rows <= 0 || f.cols <= 0) return cudaSuccess;
  // +0 is all zero bits in every dtype, as encoded(encoding, 0) is.
  if (f.zeros) return cudaMemsetAsync(dst, 0, f.rows * f.cols * sizeof(Bits), stream);
  const dim3 grid(static_cast<unsigned>(input_fill_blocks_x(f)),
                  static_cast<unsigned>(input_fill_blocks_y(f)));
  Bits* out = static_cast<Bits*>(dst);
  if (f.select_from > 0) {
    FOB_LAUNCH(fill_selection_kernel<Bits>, grid, kInputFillThreads, 0, stream)(out, f, encoding);
  } else {
    FOB_LAUNCH(fill_dense_kernel<Bits>, grid, kInputFillThreads, 0, stream)(out, f, encoding);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill_input(void* dst, int elem_bytes, const InputFill& fill,
                       const InputEncoding& encoding, cudaStream_t stream) {
  switch (elem_bytes) {
    case 2:
      return launch_fill<uint16_t>(dst, fill, encoding, stream);
    case 4:
      return launch_fill<uint32_t>(dst, fill, encoding, stream);
    case 8:
      return launch_fill<uint64_t>(dst, fill, encoding, stream);
  }
  return cudaErrorInvalidValue;
}

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

cudaError_t softmax(DType dtype, void* data, int64_t rows, int64_t cols, int64_t ld, double scale,
                    cudaStream_t stream) {
  switch (dtype) {
    case DType::fp32:
      return launch_softmax<float>(data, rows, cols, ld, scale, stream);
    case DType::fp64:
      return launch_softmax<double>(data, rows, cols, ld, scale, stream);
    case DType::bf16:
      return launch_softmax<__nv_bfloat16>(data, rows, cols, ld, scale, stream);
    case DType::fp16:
      return launch_softmax<__half>(data, rows, cols, ld, scale, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace fob::cuda
