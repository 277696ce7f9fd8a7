// The cpu backend's element-wise kernels (plan.h's softmax, online_softmax, softmax_finish and
// add), on host rows: the cuda backend's counterparts are in src/backends/cuda/kernels.cu. Each
// works in T, as the GEMMs do, so that fp32 and fp64 runs verify against the oracle's bounds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

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

}  // namespace fob::cpu
