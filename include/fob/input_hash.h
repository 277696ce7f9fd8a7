// The per-element math of the input generator (inputs.h), written once for the host and the GPU:
// the CPU backend's fill (src/core/inputs.cpp) and the cuda backend's fill kernel
// (src/backends/cuda/kernels.cu) both call these functions, and the unit tests compare them with
// input_value() on the host, so the kernel runs exactly the code the tests check.
//
// Only <cstdint>, <cmath> and plain structs: nvcc compiles this header as C++17 device code.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define FOB_HOST_DEVICE __host__ __device__
#else
#define FOB_HOST_DEVICE
#endif

namespace fob {

// splitmix64: cheap, well spread, and the same on every rank, machine and GPU.
FOB_HOST_DEVICE inline uint64_t input_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// h % 3 without a 64-bit division or high multiply, neither of which vectorises: 2^32 = 1
// (mod 3), so adding the two 32-bit halves keeps the residue, and two such folds bring any h
// below 2^32 (the second sum is at most 1 + 2^32 - 2), where % 3 is a 32-bit multiply that
// SIMD units have.
FOB_HOST_DEVICE inline uint32_t input_mod3(uint64_t h) {
  const uint64_t once = (h >> 32) + (h & 0xffffffffULL);
  const auto twice = static_cast<uint32_t>((once >> 32) + (once & 0xffffffffULL));
  return twice % 3u;
}

// A dense tensor's element in global column `col` of the row whose hash is `row_hash`: -1, 0 or 1.
FOB_HOST_DEVICE inline int dense_input(uint64_t row_hash, uint64_t col) {
  return static_cast<int>(input_mod3(input_mix(row_hash ^ (col << 1)))) - 1;
}

// What filling one InputRegion needs, computed once on the host (input_fill() in inputs.h):
// the tensor's name is hashed there, never per element.
struct InputFill {
  uint64_t tensor_hash = 0;  // input_mix(seed ^ fnv1a(tensor))
  int64_t global_row = 0;    // the global tensor's row and column of the region's first element
  int64_t global_col = 0;
  int64_t rows = 0;  // the region's rows, each `cols` (its buffer's width) long
  int64_t cols = 0;
  int64_t select_from = 0;  // > 0: a selection matrix (InputRegion::select_from)
  int64_t period = 0;       // > 0: Plan::input_period
  bool zeros = false;       // the "zeros" tensor: +0 everywhere
  float timing_sigma = 1;   // the region's spread in timing data (timing_element)
};

FOB_HOST_DEVICE inline int64_t input_wrap(int64_t index, int64_t period) {
  return period > 0 ? index % period : index;
}

// The hash of the region's row i of a dense tensor, shared by all its columns.
FOB_HOST_DEVICE inline uint64_t input_row_hash(const InputFill& f, int64_t i) {
  return input_mix(f.tensor_hash ^ static_cast<uint64_t>(input_wrap(f.global_row + i, f.period)));
}

// The region's column j of a dense tensor, in the row whose hash is `row_hash`.
FOB_HOST_DEVICE inline int dense_in_region(const InputFill& f, uint64_t row_hash, int64_t j) {
  return dense_input(row_hash, static_cast<uint64_t>(input_wrap(f.global_col + j, f.period)));
}

// Column `col` (global, after the period) of a selection matrix: its one +-1 is in row `row`.
struct SelectionEntry {
  int64_t row = 0;
  int sign = 1;
};
FOB_HOST_DEVICE inline SelectionEntry selection_column(uint64_t tensor_hash, int64_t col,
                                                       int64_t select_from) {
  const uint64_t h = input_mix(tensor_hash ^ (static_cast<uint64_t>(col) << 1));
  return {static_cast<int64_t>((h >> 1) % static_cast<uint64_t>(select_from)), (h & 1) ? 1 : -1};
}

// The region's column j of a selection matrix, its row counted from the region's first row (it
// may lie outside [0, rows): then the column is zero within the region). Only columns repeat
// with the period: each column keeps its one +-1.
FOB_HOST_DEVICE inline SelectionEntry selection_in_region(const InputFill& f, int64_t j) {
  SelectionEntry e =
      selection_column(f.tensor_hash, input_wrap(f.global_col + j, f.period), f.select_from);
  e.row -= f.global_row;
  return e;
}

// Element (i, j) of the region, -1, 0 or 1: what every fast fill computes in bulk.
FOB_HOST_DEVICE inline int input_element(const InputFill& f, int64_t i, int64_t j) {
  if (f.zeros) return 0;
  if (f.select_from > 0) {
    const SelectionEntry e = selection_in_region(f, j);
    return e.row == i ? e.sign : 0;
  }
  return dense_in_region(f, input_row_hash(f, i), j);
}

// The stored bits of -1, 0 and +1 in a buffer's dtype (in the low 2, 4 or 8 bytes), made on the
// host by the backend's own conversion, so that a GPU fill writes bits and converts nothing.
struct InputEncoding {
  uint64_t bits[3] = {0, 0, 0};
};
// Constant indices only: on the GPU the table stays in registers.
FOB_HOST_DEVICE inline uint64_t encoded(const InputEncoding& e, int value) {
  return value < 0 ? e.bits[0] : (value > 0 ? e.bits[2] : e.bits[1]);
}

// The cuda fill kernels (src/backends/cuda/kernels.cu) thread by thread, so that the unit tests
// run every thread of a launch's grid on the host. Blocks of kInputFillThreads threads; blocks
// over columns in x and over rows in y, each loop striding by the grid so a grid of any size
// covers the region, and a warp stores consecutive elements of a row.
inline constexpr int kInputFillThreads = 256;
inline constexpr int64_t kMaxInputFillBlocksX = 64;
inline constexpr int64_t kMaxInputFillBlocksY = 1024;
FOB_HOST_DEVICE inline int64_t input_fill_blocks_x(const InputFill& f) {
  const int64_t wanted = (f.cols + kInputFillThreads - 1) / kInputFillThreads;
  return wanted < kMaxInputFillBlocksX ? wanted : kMaxInputFillBlocksX;
}
FOB_HOST_DEVICE inline int64_t input_fill_blocks_y(const InputFill& f) {
  return f.rows < kMaxInputFillBlocksY ? f.rows : kMaxInputFillBlocksY;
}

// One thread's share: columns first_col, first_col + col_stride, ... of rows first_row,
// first_row + row_stride, ...
struct FillThread {
  int64_t first_col = 0, col_stride = 1;
  int64_t first_row = 0, row_stride = 1;
};

// A dense tensor: the thread hashes each of its rows once for all of its columns in it.
template <typename Bits>
FOB_HOST_DEVICE void fill_dense_thread(Bits* out, const InputFill& f, const InputEncoding& e,
                                       const FillThread& t) {
  for (int64_t i = t.first_row; i < f.rows; i += t.row_stride) {
    const uint64_t row_hash = input_row_hash(f, i);
    Bits* row = out + i * f.cols;
    for (int64_t j = t.first_col; j < f.cols; j += t.col_stride) {
      row[j] = static_cast<Bits>(encoded(e, dense_in_region(f, row_hash, j)));
    }
  }
}

// A selection matrix: the thread finds each of its columns' one +-1 once for all of its rows.
template <typename Bits>
FOB_HOST_DEVICE void fill_selection_thread(Bits* out, const InputFill& f, const InputEncoding& e,
                                           const FillThread& t) {
  const auto zero = static_cast<Bits>(encoded(e, 0));
  for (int64_t j = t.first_col; j < f.cols; j += t.col_stride) {
    const SelectionEntry entry = selection_in_region(f, j);
    const auto picked = static_cast<Bits>(encoded(e, entry.sign));
    for (int64_t i = t.first_row; i < f.rows; i += t.row_stride) {
      out[i * f.cols + j] = i == entry.row ? picked : zero;
    }
  }
}

// The timed iterations' data (docs/fairness.md): normally distributed, as a trained
// layer's are, so that a GPU's GEMMs toggle as many bits as on real data and draw its power
// (integer inputs run measurably faster on a power-limited GPU). Activations have sigma 1 (a
// normalised layer input), weights kTimingWeightSigma (Megatron's init_method_std), so that
// products stay of order one. Never verified: the verified iterations run on the integers above.
inline constexpr float kTimingWeightSigma = 0.02f;

// Element (row, col) of a region's global tensor for timing: Box-Muller over two 24-bit
// uniforms of one hash, the first in (0, 1] so that its logarithm is finite.
FOB_HOST_DEVICE inline float timing_element(uint64_t tensor_hash, int64_t row, int64_t col,
                                            float sigma) {
  const uint64_t h = input_mix(input_mix(tensor_hash ^ 0x74696d65ULL ^ static_cast<uint64_t>(row)) ^
                               (static_cast<uint64_t>(col) << 1));
  const float u1 = static_cast<float>((h >> 40) + 1) * (1.0f / 16777216.0f);
  const float u2 = static_cast<float>((h >> 16) & 0xffffffULL) * (1.0f / 16777216.0f);
  return sigma * sqrtf(-2.0f * logf(u1)) * cosf(6.28318531f * u2);
}

}  // namespace fob
