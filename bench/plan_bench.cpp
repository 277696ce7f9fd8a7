// How long generating a plan takes: the simulator will price plans at TP=64 and beyond, so
// generation must stay far below a millisecond per rank.
#include <benchmark/benchmark.h>

#include "fob/workload.h"

namespace {

void BM_MakePlan(benchmark::State& state, const char* strategy) {
  fob::CaseSpec spec;
  spec.workload = fob::find_workload("mlp");
  spec.shape = {8, 4096, 4096, 16384};
  spec.world = static_cast<int>(state.range(0));
  spec.strategy = fob::parse_strategy(strategy);
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark idiom
    fob::Plan plan = fob::make_plan(spec, 0);
    benchmark::DoNotOptimize(plan.tasks.data());
  }
  state.counters["tasks"] = static_cast<double>(fob::make_plan(spec, 0).tasks.size());
}

BENCHMARK_CAPTURE(BM_MakePlan, baseline, "baseline")->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_MakePlan, slicing16, "slicing:16")->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_MakePlan, flash, "flash")->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_MakePlan, flash_direct4, "flash_direct:4")->Arg(8)->Arg(64);

}  // namespace
