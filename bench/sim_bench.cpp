// How long `fobench sim` spends on one case at TP=64: building the 64 plans and simulating
// them, apart, so a slowdown points at the half that caused it. Issue 6 asks for every strategy
// at TP=64 x 16 slices in under a second of wall time.
#include <benchmark/benchmark.h>

#include <vector>

#include "fob/sim.h"
#include "fob/workload.h"

namespace {

fob::CaseSpec tp64_case(const char* strategy, fob::Workload workload = fob::Workload::mlp) {
  fob::CaseSpec spec;
  spec.workload = workload;
  spec.shape = {16, 1024, 1024, 4096};
  // ulysses splits the heads across the 64 ranks as well as the sequence.
  if (workload == fob::Workload::ulysses) spec.shape.heads = 64;
  spec.dtype = fob::DType::bf16;
  spec.world = 64;
  spec.strategy = fob::parse_strategy(strategy);
  return spec;
}

void BM_BuildPlans(benchmark::State& state, const char* strategy) {
  const fob::CaseSpec spec = tp64_case(strategy);
  size_t tasks = 0;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark idiom
    const std::vector<fob::Plan> plans = make_plans(spec);
    tasks = 0;
    for (const fob::Plan& p : plans) tasks += p.tasks.size();
    benchmark::DoNotOptimize(tasks);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}

void BM_SimulateCase(benchmark::State& state, const char* strategy,
                     fob::Workload workload = fob::Workload::mlp) {
  const std::vector<fob::Plan> plans = make_plans(tp64_case(strategy, workload));
  // H100-like rates; the event count, not the rates, sets the cost.
  const fob::UniformCost cost(700e12, 3e12, 5e-6, 400e9, 1.1);
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark idiom
    fob::CaseResult result = fob::simulate_case(plans, cost, "0000");
    benchmark::DoNotOptimize(result.step_seconds.data());
  }
}

BENCHMARK_CAPTURE(BM_BuildPlans, decompose, "decompose")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildPlans, flash16, "flash:16")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildPlans, flash_direct16, "flash_direct:16")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateCase, decompose, "decompose")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateCase, flash16, "flash:16")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateCase, flash_direct16, "flash_direct:16")
    ->Unit(benchmark::kMillisecond);
// ulysses' baseline: 32 all-to-alls of 63 pairwise steps each, one step change at a time.
BENCHMARK_CAPTURE(BM_SimulateCase, ulysses_baseline, "baseline", fob::Workload::ulysses)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateCase, ulysses_flash16, "flash:16", fob::Workload::ulysses)
    ->Unit(benchmark::kMillisecond);

}  // namespace
