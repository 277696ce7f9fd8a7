// The simulator's benchmark of record. BM_SimulateSweep: what `fobench sim` does for issue 18's
// two cases (TP = 64 mlp with every strategy at 16 slices; DP = 1024 gemm_rs_grad with
// baseline, flash:4 and flash_direct, the reference modes included, on the shipped
// h100_nvlink_ib machine): the plans it simulates, the simulation and the summary statistics,
// one case after another on one core, through one period of the ring (8 ranks: one node) and,
// for TP = 64, through all 64 ranks beside it. Then one TP = 64 case's plan building and
// simulation apart, so a slowdown points at the half that caused it. JSON:
// build/bench/fob_sim_bench --benchmark_format=json.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "fob/machine.h"
#include "fob/metrics.h"
#include "fob/sim.h"
#include "fob/workload.h"

namespace {

fob::CaseSpec bf16_case(fob::Workload workload, const fob::Shape& shape, int world,
                        const char* strategy) {
  fob::CaseSpec spec;
  spec.workload = workload;
  spec.shape = shape;
  spec.dtype = fob::DType::bf16;
  spec.world = world;
  spec.strategy = fob::parse_strategy(strategy);
  return spec;
}

const fob::Machine& h100() {
  static const fob::Machine machine = fob::load_machine(
      std::string(FOB_SOURCE_DIR) + "/bench_configs/machines/h100_nvlink_ib.yaml");
  return machine;
}

struct Sweep {
  fob::Workload workload;
  fob::Shape shape;
  int world;
  std::vector<const char*> strategies;
};

const Sweep kTp64 = {fob::find_workload("mlp"),
                     {8, 4096, 8192, 4 * 8192},
                     64,
                     {"compute_only", "comm_only", "baseline", "slicing:16", "decompose",
                      "flash:16", "flash_direct:16"}};
const Sweep kDp1024 = {fob::find_workload("gemm_rs_grad"),
                       {4, 4096, 8192, 4 * 8192},
                       1024,
                       {"compute_only", "comm_only", "baseline", "flash:4", "flash_direct"}};

void BM_SimulateSweep(benchmark::State& state, const Sweep& sweep, bool every_rank) {
  const fob::MachineCost cost(h100());
  double tasks = 0, ranks = 0;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark idiom
    tasks = ranks = 0;
    for (const char* strategy : sweep.strategies) {
      const fob::CaseSpec spec = bf16_case(sweep.workload, sweep.shape, sweep.world, strategy);
      const std::vector<fob::Plan> plans =
          every_rank ? fob::make_plans(spec) : fob::plans_to_simulate(spec, cost);
      const fob::CaseResult result = fob::simulate_case(plans, spec.world, cost, "0000");
      const fob::CaseStats stats = fob::case_stats(result);
      benchmark::DoNotOptimize(stats.t_median);
      for (const fob::Plan& p : plans) tasks += static_cast<double>(p.tasks.size());
      ranks += static_cast<double>(plans.size());
    }
  }
  state.counters["tasks_simulated"] = tasks;
  state.counters["ranks_simulated"] = ranks;
}

BENCHMARK_CAPTURE(BM_SimulateSweep, tp64_mlp_one_period, kTp64, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateSweep, tp64_mlp_every_rank, kTp64, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateSweep, dp1024_gemm_rs_grad_one_period, kDp1024, false)
    ->Unit(benchmark::kMillisecond);
// The same at a quarter of the world: a quarter of the tasks per period, so the time per task
// simulated shows whether the cost grows faster than the work.
const Sweep kDp256 = {kDp1024.workload, kDp1024.shape, 256, kDp1024.strategies};
BENCHMARK_CAPTURE(BM_SimulateSweep, dp256_gemm_rs_grad_one_period, kDp256, false)
    ->Unit(benchmark::kMillisecond);

fob::CaseSpec tp64_case(const char* strategy, fob::Workload workload = fob::find_workload("mlp")) {
  fob::Shape shape = {16, 1024, 1024, 4096};
  // ulysses splits the heads across the 64 ranks as well as the sequence.
  if (workload == fob::find_workload("ulysses")) shape.heads = 64;
  return bf16_case(workload, shape, 64, strategy);
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
                     fob::Workload workload = fob::find_workload("mlp")) {
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
BENCHMARK_CAPTURE(BM_SimulateCase, ulysses_baseline, "baseline", fob::find_workload("ulysses"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateCase, ulysses_flash16, "flash:16", fob::find_workload("ulysses"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
