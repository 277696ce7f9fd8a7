// The kernels the cuda backend needs besides cuBLAS: element-wise accumulation for the `add`
// task, the row softmax for the `softmax` task, the streamed attention's online softmax and
// its normalisation, the mixture-of-experts layer's row gather and gated activation, and the
// input generator.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "fob/input_hash.h"
#include "fob/types.h"

namespace fob::cuda {

// dst[i] += src[i] for `count` elements of `dtype` (16-bit types add in fp32), on `stream`.
cudaError_t add(DType dtype, void* dst, const void* src, int64_t count, cudaStream_t stream);
// The blocks add() launches for `count` elements: enough to fill any current GPU, the
// grid-stride loop covering the rest.
inline constexpr int kAddThreads = 256;
inline int add_blocks(int64_t count) {
  const int64_t wanted = (count + kAddThreads - 1) / kAddThreads;
  return static_cast<int>(wanted < 4096 ? wanted : 4096);
}

// Each of `rows` rows of `cols` elements, starting `ld` elements apart at `data` (a row's first
// element), becomes softmax(scale * row) in place, on `stream`. fp32, bf16 and fp16 are
// computed in fp32, fp64 in fp64; the row maximum is subtracted before exp().
cudaError_t softmax(DType dtype, void* data, int64_t rows, int64_t cols, int64_t ld, double scale,
                    cudaStream_t stream);

// One block of keys of the streamed attention (plan.h, TaskKind::online_softmax): `rows` score
// rows (`heads` groups of rows / heads query rows) of `cols` keys, `ld` apart; the running
// maximum and sum of query row i and head h at state[i * ld_state + h] and [... + heads + h];
// the output's head h of query i at out[i * ld_out + h * head_width], head_width elements, which
// scale by exp(old maximum - new maximum) unless `first`.
struct OnlineSoftmax {
  void* scores = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  void* state = nullptr;
  int64_t ld_state = 0;
  void* out = nullptr;
  int64_t ld_out = 0;
  int heads = 1;
  int64_t head_width = 0;
  double scale = 1;
  bool first = true;
};
cudaError_t online_softmax(DType dtype, const OnlineSoftmax& args, cudaStream_t stream);

// `rows` rows of `heads` * `head_width` elements at `out` (`ld_out` apart) divide, head by
// head, by the sums in `state` (TaskKind::softmax_finish).
cudaError_t softmax_finish(DType dtype, void* out, int64_t rows, int64_t ld_out, const void* state,
                           int64_t ld_state, int heads, int64_t head_width, cudaStream_t stream);

// TaskKind::gather: `rows` rows of `width` elements (rows contiguous at `dst` and `src`): dst
// row i (=|+=) weight[i] * src row src_row[i]; src_row[i] = -1 zeroes the row, or leaves it when
// `accumulate`. src_row and weight (nullptr: every weight 1) are device memory, `rows` long.
struct Gather {
  void* dst = nullptr;
  const void* src = nullptr;
  const int64_t* src_row = nullptr;
  const double* weight = nullptr;
  int64_t rows = 0, width = 0;
  bool accumulate = false;
};
cudaError_t gather(DType dtype, const Gather& args, cudaStream_t stream);

// TaskKind::glu: `rows` rows of `width` outputs at `dst`, each max(gate, 0) * up of the row's
// gate and up projection side by side at `src` (2 * width per row); 16-bit types in fp32.
cudaError_t glu(DType dtype, void* dst, const void* src, int64_t rows, int64_t width,
                cudaStream_t stream);

// Writes the input region `fill` (fill.rows x fill.cols elements of `elem_bytes` bytes, row-major)
// at `dst` on `stream`: element (i, j) is input_element(fill, i, j) stored as its bits in
// `encoding` (input_hash.h), the same math the host's fill_input() runs.
cudaError_t fill_input(void* dst, int elem_bytes, const InputFill& fill,
                       const InputEncoding& encoding, cudaStream_t stream);

// Writes the region's timing data (timing_element, input_hash.h) in `dtype` at `dst`.
cudaError_t fill_timing(DType dtype, void* dst, const InputFill& fill, cudaStream_t stream);

}  // namespace fob::cuda
