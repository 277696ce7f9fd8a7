// What generating the CPU backend's inputs costs per GiB of buffer, on one thread: the
// element-by-element path the backend used to run (input_value() for every element into a
// vector of doubles, then converted to the buffer's type: ElementwiseFill) beside the bulk fill it
// runs now (fill_input() in the buffer's type: BulkFill). Both write the same bits
// (tests/unit/test_inputs.cpp).
//
// Each benchmark reports "s_per_GiB" (seconds to fill one GiB of buffer) and bytes_per_second,
// both of the process's CPU time, which on a shared machine varies less than the wall clock.
// Benchmark arguments: rows, cols of one region of tensor X at a global offset, and select_from
// (0: dense, as X, W1, H and W2 are; > 0: a selection matrix, as attention's projections are).
// The default region, 4096 x 8192, is 128 MiB in fp32 and 256 MiB in fp64.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "fob/inputs.h"

namespace {

constexpr uint64_t kSeed = 1;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Region {
  fob::Plan plan;
  fob::InputRegion region;
};

Region region_of(const benchmark::State& state) {
  Region r;
  r.plan.buffers.push_back(
      {.name = "X", .rows = state.range(0), .cols = state.range(1), .layout = {}});
  r.region = {.buffer = 0,
              .row = 0,
              .rows = state.range(0),
              .tensor = "X",
              .global_row = 3 * state.range(0),
              .global_col = 0,
              .select_from = state.range(2)};
  r.plan.inputs.push_back(r.region);
  return r;
}

// The CPU backend's fill before the bulk fill: one input_value() call per element (the tensor
// name hashed every time), into doubles, then converted.
template <typename T>
void elementwise_fill(const Region& r, T* out) {
  const int64_t cols = r.plan.buffers[r.region.buffer].cols;
  std::vector<double> values(r.region.rows * cols);
  for (int64_t i = 0; i < r.region.rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      values[i * cols + j] =
          fob::input_value(kSeed, r.region.tensor, r.region.global_row + i, r.region.global_col + j,
                           r.region.select_from, r.plan.input_period);
    }
  }
  for (size_t k = 0; k < values.size(); ++k) out[k] = static_cast<T>(values[k]);
}

// The CPU backend's fill now.
template <typename T>
void bulk_fill(const Region& r, T* out) {
  fob::fill_input(fob::input_fill(r.plan, r.region, kSeed), out);
}

// The buffer is written once before timing, so that page faults are not counted as filling.
template <typename T, void (*Fill)(const Region&, T*)>
void BM_Fill(benchmark::State& state) {
  const Region r = region_of(state);
  const int64_t elements = r.region.rows * r.plan.buffers[0].cols;
  std::vector<T> out(elements, T(1));
  for (auto _ : state) {
    Fill(r, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double bytes = static_cast<double>(elements) * sizeof(T);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["s_per_GiB"] = benchmark::Counter(
      bytes / kGiB, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "cols", "select_from"});
  b->Args({4096, 8192, 0});
  b->Args({4096, 8192, 128});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Fill<float, elementwise_fill<float>>)->Name("ElementwiseFill<float>")->Apply(shapes);
BENCHMARK(BM_Fill<float, bulk_fill<float>>)->Name("BulkFill<float>")->Apply(shapes);
BENCHMARK(BM_Fill<double, elementwise_fill<double>>)
    ->Name("ElementwiseFill<double>")
    ->Apply(shapes);
BENCHMARK(BM_Fill<double, bulk_fill<double>>)->Name("BulkFill<double>")->Apply(shapes);

}  // namespace
