#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

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
  FOB_LAUNCH(add_kernel<T>, add_blocks(count), kAddThreads, 0, stream)
  (static_cast<T*>(dst), static_cast<const T*>(src), count);
  return cudaGetLastError();
}

// launch(T*) (a null pointer: only its type matters) for dtype's element type T.
template <typename Launch>
cudaError_t with_element_type(DType dtype, Launch launch) {
  switch (dtype) {
    case DType::fp32:
      return launch(static_cast<float*>(nullptr));
    case DType::fp64:
      return launch(static_cast<double*>(nullptr));
    case DType::bf16:
      return launch(static_cast<__nv_bfloat16*>(nullptr));
    case DType::fp16:
      return launch(static_cast<__half*>(nullptr));
  }
  return cudaErrorInvalidValue;
}

// A grid-stride loop's start and step: this thread's place in the grid, and the grid's threads.
__device__ inline int64_t grid_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_threads() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

// One thread per destination element, grid-stride; a row's map entry is read by each of its
// threads (a few bytes beside the row's width of loads).
template <typename T>
__global__ void gather_kernel(T* dst, const T* src, const int64_t* src_row, const double* weight,
                              int64_t rows, int64_t width, bool accumulate) {
  using Acc = typename Accumulator<T>::type;
  const int64_t count = rows * width;
  for (int64_t e = grid_thread(); e < count; e += grid_threads()) {
    const int64_t i = e / width, j = e % width;
    const int64_t from = src_row[i];
    if (from < 0) {
      if (!accumulate) dst[e] = static_cast<T>(Acc(0));
      continue;
    }
    const Acc w = weight ? static_cast<Acc>(weight[i]) : Acc(1);
    const Acc value = w * static_cast<Acc>(src[from * width + j]);
    dst[e] = static_cast<T>(accumulate ? static_cast<Acc>(dst[e]) + value : value);
  }
}

template <typename T>
cudaError_t launch_gather(const Gather& a, cudaStream_t stream) {
  const int64_t count = a.rows * a.width;
  if (count <= 0) return cudaSuccess;
  if (a.src_row == nullptr) return cudaErrorInvalidValue;
  FOB_LAUNCH(gather_kernel<T>, add_blocks(count), kAddThreads, 0, stream)
  (static_cast<T*>(a.dst), static_cast<const T*>(a.src), a.src_row, a.weight, a.rows, a.width,
   a.accumulate);
  return cudaGetLastError();
}

template <typename T>
__global__ void glu_kernel(T* dst, const T* src, int64_t rows, int64_t width) {
  using Acc = typename Accumulator<T>::type;
  const int64_t count = rows * width;
  for (int64_t e = grid_thread(); e < count; e += grid_threads()) {
    const int64_t i = e / width, j = e % width;
    const Acc gate = static_cast<Acc>(src[i * 2 * width + j]);
    const Acc up = static_cast<Acc>(src[i * 2 * width + width + j]);
    dst[e] = static_cast<T>((gate > Acc(0) ? gate : Acc(0)) * up);
  }
}

template <typename T>
cudaError_t launch_glu(void* dst, const void* src, int64_t rows, int64_t width,
                       cudaStream_t stream) {
  const int64_t count = rows * width;
  if (count <= 0) return cudaSuccess;
  FOB_LAUNCH(glu_kernel<T>, add_blocks(count), kAddThreads, 0, stream)
  (static_cast<T*>(dst), static_cast<const T*>(src), rows, width);
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

// One thread block per score row, as softmax_kernel: the block's maximum and sum of exp fold
// into the row's running state, the row becomes exp(scale * x - new maximum), and the query's
// output head rescales. Every thread reads the old maximum before the reductions' barriers,
// after which thread 0 alone writes the state.
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads) online_softmax_kernel(OnlineSoftmax a) {
  using Acc = typename Accumulator<T>::type;
  __shared__ Acc partial[kSoftmaxThreads / kWarp];
  const Acc scale = static_cast<Acc>(a.scale);
  const Acc lowest = -static_cast<Acc>(INFINITY);
  const int64_t q = a.rows / a.heads;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t head = r / q, i = r % q;
    T* row = static_cast<T*>(a.scores) + r * a.ld;
    T* state = static_cast<T*>(a.state) + i * a.ld_state;
    const Acc old_max = a.first ? lowest : static_cast<Acc>(state[head]);
    const Acc old_sum = a.first ? Acc(0) : static_cast<Acc>(state[a.heads + head]);
    Acc max = lowest;
    for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
      max = Max{}(max, scale * static_cast<Acc>(row[j]));
    }
    const Acc new_max = Max{}(old_max, block_reduce(max, Max{}, lowest, partial));
    Acc sum = 0;
    for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
      const Acc e = exp_of(scale * static_cast<Acc>(row[j]) - new_max);
      row[j] = static_cast<T>(e);
      sum += e;
    }
    sum = block_reduce(sum, Sum{}, Acc(0), partial);
    const Acc rescale = a.first ? Acc(0) : exp_of(old_max - new_max);
    if (threadIdx.x == 0) {
      state[head] = static_cast<T>(new_max);
      state[a.heads + head] = static_cast<T>(old_sum * rescale + sum);
    }
    if (!a.first) {
      T* out = static_cast<T*>(a.out) + i * a.ld_out + head * a.head_width;
      for (int64_t c = threadIdx.x; c < a.head_width; c += blockDim.x) {
        out[c] = static_cast<T>(static_cast<Acc>(out[c]) * rescale);
      }
    }
  }
}

template <typename T>
cudaError_t launch_online_softmax(const OnlineSoftmax& a, cudaStream_t stream) {
  if (a.rows <= 0 || a.cols <= 0) return cudaSuccess;
  if (a.ld < a.cols || a.heads < 1 || a.rows % a.heads != 0 || a.ld_state < 2 * a.heads ||
      a.ld_out < a.heads * a.head_width) {
    return cudaErrorInvalidValue;
  }
  const int blocks = static_cast<int>(a.rows < kMaxSoftmaxBlocks ? a.rows : kMaxSoftmaxBlocks);
  FOB_LAUNCH(online_softmax_kernel<T>, blocks, kSoftmaxThreads, 0, stream)(a);
  return cudaGetLastError();
}

template <typename T>
__global__ void softmax_finish_kernel(T* out, int64_t rows, int64_t ld_out, const T* state,
                                      int64_t ld_state, int heads, int64_t head_width) {
  using Acc = typename Accumulator<T>::type;
  const int64_t width = heads * head_width, count = rows * width;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += stride) {
    const int64_t i = e / width, c = e % width;
    const Acc sum = static_cast<Acc>(state[i * ld_state + heads + c / head_width]);
    T& x = out[i * ld_out + c];
    x = static_cast<T>(static_cast<Acc>(x) / sum);
  }
}

template <typename T>
cudaError_t launch_softmax_finish(void* out, int64_t rows, int64_t ld_out, const void* state,
                                  int64_t ld_state, int heads, int64_t head_width,
                                  cudaStream_t stream) {
  const int64_t count = rows * heads * head_width;
  if (count <= 0) return cudaSuccess;
  if (ld_out < heads * head_width || ld_state < 2 * heads) return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  const int64_t wanted = (count + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
  FOB_LAUNCH(softmax_finish_kernel<T>, blocks, kThreads, 0, stream)
  (static_cast<T*>(out), rows, ld_out, static_cast<const T*>(state), ld_state, heads, head_width);
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

// Timing data (timing_element, input_hash.h): a grid-stride loop over the region's elements.
template <typename T>
__global__ void fill_timing_kernel(T* out, InputFill f) {
  const int64_t count = f.rows * f.cols;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += stride) {
    const int64_t i = e / f.cols, j = e % f.cols;
    out[e] = static_cast<T>(
        timing_element(f.tensor_hash, f.global_row + i, f.global_col + j, f.timing_sigma));
  }
}

template <typename T>
cudaError_t launch_fill_timing(void* dst, const InputFill& f, cudaStream_t stream) {
  if (f.rows <= 0 || f.cols <= 0) return cudaSuccess;
  if (f.zeros) return cudaMemsetAsync(dst, 0, f.rows * f.cols * sizeof(T), stream);
  constexpr int kThreads = 256;
  const int64_t wanted = (f.rows * f.cols + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
  FOB_LAUNCH(fill_timing_kernel<T>, blocks, kThreads, 0, stream)(static_cast<T*>(dst), f);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill_timing(DType dtype, void* dst, const InputFill& fill, cudaStream_t stream) {
  switch (dtype) {
    case DType::fp32:
      return launch_fill_timing<float>(dst, fill, stream);
    case DType::fp64:
      return launch_fill_timing<double>(dst, fill, stream);
    case DType::bf16:
      return launch_fill_timing<__nv_bfloat16>(dst, fill, stream);
    case DType::fp16:
      return launch_fill_timing<__half>(dst, fill, stream);
  }
  return cudaErrorInvalidValue;
}

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

cudaError_t gather(DType dtype, const Gather& args, cudaStream_t stream) {
  return with_element_type(dtype, [&](auto* type) {
    return launch_gather<std::remove_pointer_t<decltype(type)>>(args, stream);
  });
}

cudaError_t glu(DType dtype, void* dst, const void* src, int64_t rows, int64_t width,
                cudaStream_t stream) {
  return with_element_type(dtype, [&](auto* type) {
    return launch_glu<std::remove_pointer_t<decltype(type)>>(dst, src, rows, width, stream);
  });
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

cudaError_t online_softmax(DType dtype, const OnlineSoftmax& args, cudaStream_t stream) {
  switch (dtype) {
    case DType::fp32:
      return launch_online_softmax<float>(args, stream);
    case DType::fp64:
      return launch_online_softmax<double>(args, stream);
    case DType::bf16:
      return launch_online_softmax<__nv_bfloat16>(args, stream);
    case DType::fp16:
      return launch_online_softmax<__half>(args, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t softmax_finish(DType dtype, void* out, int64_t rows, int64_t ld_out, const void* state,
                           int64_t ld_state, int heads, int64_t head_width, cudaStream_t stream) {
  switch (dtype) {
    case DType::fp32:
      return launch_softmax_finish<float>(out, rows, ld_out, state, ld_state, heads, head_width,
                                          stream);
    case DType::fp64:
      return launch_softmax_finish<double>(out, rows, ld_out, state, ld_state, heads, head_width,
                                           stream);
    case DType::bf16:
      return launch_softmax_finish<__nv_bfloat16>(out, rows, ld_out, state, ld_state, heads,
                                                  head_width, stream);
    case DType::fp16:
      return launch_softmax_finish<__half>(out, rows, ld_out, state, ld_state, heads, head_width,
                                           stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace fob::cuda
