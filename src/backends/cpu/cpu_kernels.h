// The cpu backend's element-wise kernels (plan.h's softmax, online_softmax, softmax_finish,
// add, gather and glu), on host rows: the cuda backend's counterparts are in
// src/backends/cuda/kernels.cu. Each works in T, as the GEMMs do, so that fp32 and fp64 runs verify
// against the oracle's bounds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace fob::cpu {

// Subtracting the row's maximum keeps exp() finite; the result is the same softmax.
template <typename T>
void softmax_row(T* row, int64_t n, double scale) {
  const T s = static_cast<T>(scale);
  T max = row[0] * s;
  for (int64_t j = 1; j < n; ++j) max = std::max(max, row[j] * s);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] * s - max);
    sum += row[j];
  }
  for (int64_t j = 0; j < n; ++j) row[j] /= sum;
}

// One row's block of n keys of the streamed attention (TaskKind::online_softmax): the scores
// become exp(score * scale - max) against the running maximum, the running sum grows by them,
// and when a block came before (accumulate) the head's k output columns are rescaled to the new
// maximum.
template <typename T>
void online_softmax_row(T* row, int64_t n, T scale, T& running_max, T& running_sum, T* out,
                        int64_t k, bool accumulate) {
  T block_max = row[0] * scale;
  for (int64_t j = 1; j < n; ++j) block_max = std::max(block_max, row[j] * scale);
  const T old_max = accumulate ? running_max : block_max;
  const T new_max = std::max(old_max, block_max);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] * scale - new_max);
    sum += row[j];
  }
  running_max = new_max;
  if (!accumulate) {
    running_sum = sum;
    return;
  }
  const T rescale = std::exp(old_max - new_max);
  running_sum = running_sum * rescale + sum;
  for (int64_t c = 0; c < k; ++c) out[c] *= rescale;
}

// The streamed attention's last step (TaskKind::softmax_finish): each of a row's heads' k
// output columns divided by that head's running sum (state holds the maxima, then the sums).
template <typename T>
void softmax_finish_row(const T* state, T* out, int heads, int64_t k) {
  for (int head = 0; head < heads; ++head) {
    const T sum = state[heads + head];
    for (int64_t c = 0; c < k; ++c) out[head * k + c] /= sum;
  }
}

template <typename T>
void add(T* dst, const T* src, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

// TaskKind::gather over `rows` rows of `width` elements, rows contiguous: dst row i (=|+=)
// weight[i] * src row src_row[i] (weight empty: 1); a source -1 zeroes the row, or leaves it
// when accumulating.
template <typename T>
void gather_rows(T* dst, const T* src, const std::vector<int64_t>& src_row,
                 const std::vector<double>& weight, int64_t width, bool accumulate) {
  for (size_t i = 0; i < src_row.size(); ++i) {
    T* out = dst + static_cast<int64_t>(i) * width;
    if (src_row[i] < 0) {
      if (!accumulate) std::fill(out, out + width, T(0));
      continue;
    }
    const T* in = src + src_row[i] * width;
    const T w = weight.empty() ? T(1) : static_cast<T>(weight[i]);
    for (int64_t j = 0; j < width; ++j) out[j] = accumulate ? out[j] + w * in[j] : w * in[j];
  }
}

// TaskKind::glu: each of `rows` rows of `width` outputs is max(gate, 0) * up, the row's gate
// and up projection side by side in `src` (2 * width per row).
template <typename T>
void glu_rows(T* dst, const T* src, int64_t rows, int64_t width) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* gate = src + i * 2 * width;
    const T* up = gate + width;
    T* out = dst + i * width;
    for (int64_t j = 0; j < width; ++j) out[j] = std::max(gate[j], T(0)) * up[j];
  }
}

}  // namespace fob::cpu
