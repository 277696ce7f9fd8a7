// What slicing one workload GEMM costs in efficiency, on the CPU (the BLAS libblas.so.3 resolves
// to, OpenBLAS in a normal build, one thread).
//
// The mlp's AG GEMM, Y[M, F/N] = X[M, D] * W[D, F/N] (row-major), run as S GEMMs of M/S rows
// each for S = 1, 2, 4, 8, 16: data slicing and the flash strategies pay this cost for every
// slice they overlap. Each benchmark reports the achieved rate ("flops" in FLOP/s, "gflops");
// the efficiency of S slices is its rate over the S = 1 rate of the same shape and type, read
// off the JSON output (--benchmark_out=FILE --benchmark_out_format=json).
//
// Benchmark arguments: M, D, F/N, S. The default shape runs quickly on two cores; another one
// is set with FOB_GEMM_SHAPE=M,D,FN in the environment (M must divide by 16).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include "backends/cpu/blas_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gemm_shape.h"

namespace {

constexpr int64_t kDefaultM = 2048;
constexpr int64_t kDefaultD = 512;
constexpr int64_t kDefaultFn = 512;

// Small integers in {-2..2}: every sum is exact in fp32 and fp64 whatever the order.
inline int x_value(int64_t i, int64_t k) {
  return static_cast<int>((i * 131 + k * 17 + 7) % 5) - 2;
}
inline int w_value(int64_t k, int64_t j) {
  return static_cast<int>((k * 29 + j * 13 + 3) % 5) - 2;
}

void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c,
              static_cast<int>(n));
}

void gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0, a, static_cast<int>(k), b, static_cast<int>(n), 0.0, c,
              static_cast<int>(n));
}

template <typename T>
void BM_GemmSlices(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int64_t d = state.range(1);
  const int64_t fn = state.range(2);
  const int64_t slices = state.range(3);
  if (m <= 0 || d <= 0 || fn <= 0 || slices <= 0 || m % slices != 0) {
    state.SkipWithError("M must be positive and divisible by the number of slices");
    return;
  }
  fob::blas_set_threads(1);

  const int64_t rows = m / slices;
  std::vector<T> x(static_cast<size_t>(m * d));
  std::vector<T> w(static_cast<size_t>(d * fn));
  std::vector<T> y(static_cast<size_t>(m * fn), T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < d; ++k)
      x[static_cast<size_t>(i * d + k)] = static_cast<T>(x_value(i, k));
  for (int64_t k = 0; k < d; ++k)
    for (int64_t j = 0; j < fn; ++j)
      w[static_cast<size_t>(k * fn + j)] = static_cast<T>(w_value(k, j));

  for (auto _ : state) {
    for (int64_t s = 0; s < slices; ++s) {
      gemm(rows, fn, d, x.data() + s * rows * d, w.data(), y.data() + s * rows * fn);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }

  // The first and last row of every slice must equal the exact integer result.
  for (int64_t s = 0; s < slices; ++s) {
    for (int64_t i : {s * rows, s * rows + rows - 1}) {
      for (int64_t j = 0; j < fn; ++j) {
        int64_t want = 0;
        for (int64_t k = 0; k < d; ++k) want += int64_t{x_value(i, k)} * w_value(k, j);
        if (y[static_cast<size_t>(i * fn + j)] != static_cast<T>(want)) {
          state.SkipWithError("wrong GEMM result");
          return;
        }
      }
    }
  }

  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(d) *
                       static_cast<double>(fn) * static_cast<double>(state.iterations());
  state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsRate);
  state.counters["gflops"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["rows_per_slice"] = static_cast<double>(rows);
}

void apply_args(benchmark::internal::Benchmark* b) {
  // Read once for all the benchmark families, so a bad value is reported once.
  static const fob::bench::GemmShape shape =
      fob::bench::gemm_shape({kDefaultM, kDefaultD, kDefaultFn});
  fob::bench::add_slice_args(b, shape);
  b->UseRealTime();
}

BENCHMARK_TEMPLATE(BM_GemmSlices, float)->Name("gemm_slices/fp32")->Apply(apply_args);
BENCHMARK_TEMPLATE(BM_GemmSlices, double)->Name("gemm_slices/fp64")->Apply(apply_args);

}  // namespace
