// What the CPU and CUDA slice benchmarks share: the GEMM shape they time (FOB_GEMM_SHAPE or a
// backend-sized default) and the slice counts each family runs.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fob::bench {

struct GemmShape {
  int64_t m, d, fn;
};

// FOB_GEMM_SHAPE=M,D,FN, or `fallback` (said on stderr when the variable is malformed).
inline GemmShape gemm_shape(GemmShape fallback) {
  const char* env = std::getenv("FOB_GEMM_SHAPE");
  if (env == nullptr || *env == '\0') return fallback;
  long long a = 0, b = 0, c = 0;
  if (std::sscanf(env, "%lld,%lld,%lld", &a, &b, &c) == 3 && a > 0 && b > 0 && c > 0) {
    return {a, b, c};
  }
  std::fprintf(stderr,
               "FOB_GEMM_SHAPE=%s: expected M,D,FN (positive integers); using %lld,%lld,%lld\n",
               env, static_cast<long long>(fallback.m), static_cast<long long>(fallback.d),
               static_cast<long long>(fallback.fn));
  return fallback;
}

// Arguments M, D, FN and S for S in 1, 2, 4, 8, 16 slices.
inline void add_slice_args(benchmark::internal::Benchmark* b, const GemmShape& shape) {
  b->ArgNames({"M", "D", "FN", "S"});
  for (int64_t s : {1, 2, 4, 8, 16}) b->Args({shape.m, shape.d, shape.fn, s});
  b->Unit(benchmark::kMillisecond);
}

}  // namespace fob::bench
