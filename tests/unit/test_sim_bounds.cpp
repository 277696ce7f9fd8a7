// `fobench sim`'s bounds (src/app/sim_bounds.h): the search counted, the plans' size estimated
// and refused past the ceilings before anything is built, and the -o file whole or absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "../common/cli_call.h"
#include "../common/input_error.h"
#include "../common/temp_dir.h"
#include "app/sim_bounds.h"
#include "fob/machine.h"
#include "fob/strategy.h"

namespace fob {
namespace {

CaseSpec case_at(const char* workload, const char* strategy, int world, Shape shape) {
  CaseSpec spec;
  spec.workload = find_workload(workload);
  spec.shape = shape;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return spec;
}

// A model whose ring has no period: every rank's plan is built and stored.
class NoPeriodCost : public UniformCost {
 public:
  NoPeriodCost() : UniformCost(1e12, 1e12, 0, 1e9) {}
  int rotation_period(int world) const override { return world; }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The counts that grow with the world are estimated within 25% of the plan's (rings as N m,
// ulysses' flash_stream as N^2 m), from plans at smaller worlds only.
TEST(SimBounds, EstimatesThePlansThatGrowWithTheWorld) {
  const Shape shape{1, 1 << 14, 1024, 4096, 256};
  for (int world : {64, 128}) {
    for (const auto& [workload, strategy] :
         std::vector<std::pair<const char*, const char*>>{{"ag_gemm", "flash:16"},
                                                          {"mlp", "flash_direct:4"},
                                                          {"mlp_bwd", "decompose"},
                                                          {"gemm_ar", "flash:4"},
                                                          {"attn", "flash_qs:4"},
                                                          {"ulysses", "flash_stream:1"},
                                                          {"ulysses", "flash_stream:4"}}) {
      const CaseSpec spec = case_at(workload, strategy, world, shape);
      const double actual = static_cast<double>(make_plan(spec, 0).tasks.size());
      const double estimate = static_cast<double>(estimated_plan_tasks(spec));
      EXPECT_GT(estimate, 0.8 * actual) << workload << " " << strategy << " at " << world;
      EXPECT_LT(estimate, 1.25 * actual) << workload << " " << strategy << " at " << world;
    }
  }
  // Up to 32 ranks the plan is counted.
  const CaseSpec small = case_at("mlp", "flash:16", 32, shape);
  EXPECT_EQ(estimated_plan_tasks(small), make_plan(small, 0).tasks.size());
}

// A mixture of experts past its experts: the 8 ranks that hold one build far larger plans than
// the 56 that only send and receive, and no plan is another's rotation, so every rank is built.
// The estimate is the mean over the ranks, not rank 0's (near 6 times the mean), and a result's
// records, padded to the largest plan, are counted at the largest plan's size.
TEST(SimBounds, AMixtureOfExpertsIsCountedAtItsMeanRank) {
  const Shape shape{1, 4096, 64, 64, 0, MoeShape{8, 2, 64, 0, 0, 0}};
  const CaseSpec spec = case_at("moe", "flash:4", 64, shape);
  double mean = 0, largest = 0;
  for (int r = 0; r < spec.world; ++r) {
    const double tasks = static_cast<double>(make_plan(spec, r).tasks.size());
    mean += tasks / spec.world;
    largest = std::max(largest, tasks);
  }
  ASSERT_GT(largest, 3 * mean);
  const double estimate = static_cast<double>(estimated_plan_tasks(spec));
  EXPECT_GT(estimate, 0.8 * mean);
  EXPECT_LT(estimate, 1.25 * mean);
  const SimCaseCost cost = sim_case_cost(spec, NoPeriodCost());
  EXPECT_EQ(cost.plans, 64u);
  EXPECT_GT(static_cast<double>(cost.record_tasks), 0.8 * largest);
}

// `sim --tune` at 4096 ranks ran for minutes: its estimate refuses it at once, naming the
// count, the largest case and what to split.
TEST(SimBounds, ATuneAt4096RanksIsRefusedAtOnce) {
  const Machine machine = load_machine(source_file("bench_configs/machines/h100_nvlink_ib.yaml"));
  const MachineCost cost(machine);
  Config point;
  point.workload = find_workload("ag_gemm");
  point.shape = Shape{1, 65536, 8192, 0, 0};
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<CaseSpec> specs = sim_cases({point}, {4096}, true);
  // Every parameter 1..16 of each strategy that takes one, and the rest once, at one world.
  size_t want = 0;
  for (const Strategy* s : all_strategies()) {
    if (strategy_applies(*s, point.workload)) want += s->param_name ? 16 : 1;
  }
  EXPECT_EQ(specs.size(), want);
  const std::string msg =
      input_error([&] { check_sim_bounds(specs, cost, false, 2, -1, "sim --tune"); });
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_TRUE(contains(msg, "sim --tune: " + std::to_string(want) + " case(s)")) << msg;
  EXPECT_TRUE(contains(msg, "task units")) << msg;
  EXPECT_TRUE(contains(msg, "more than the 50,000,000 one sim takes")) << msg;
  EXPECT_TRUE(contains(msg, "flash:16 at world 4096: 10 plans of about")) << msg;
  EXPECT_TRUE(contains(msg, "--world")) << msg;
  // One plan past kMaxSimPlanTasks is named by itself.
  point.shape = Shape{1, 1 << 20, 8192, 1 << 16, 0};
  const std::vector<CaseSpec> huge = sim_cases({point}, {65536}, true);
  const std::string one =
      input_error([&] { check_sim_bounds(huge, cost, false, 2, -1, "sim --tune"); });
  EXPECT_TRUE(contains(one, "more than the 262,144 one simulated plan takes")) << one;
}

// The search is counted like run's sweep: past 100,000 cases, refused before they are made.
TEST(SimBounds, TheCasesAreBoundedLikeRun) {
  Config point;
  point.workload = find_workload("ag_gemm");
  point.shape = Shape{1, 4096, 256, 0, 0};
  const std::vector<int> many(100001, 1);
  std::string msg = input_error([&] { sim_cases({point}, many, false); });
  EXPECT_TRUE(contains(msg, "100001 world size(s) x 1 sweep point(s)")) << msg;
  EXPECT_TRUE(contains(msg, "at least 100,001")) << msg;
  const std::vector<int> worlds(10000, 4);
  msg = input_error([&] { sim_cases({point}, worlds, true); });
  EXPECT_TRUE(contains(msg, "x every parameter of each strategy = more than 100,000 cases")) << msg;
  EXPECT_TRUE(contains(msg, "split the --world list or the sweep")) << msg;
}

// Where no ring period spares them, every rank's plan is kept for the file: past 1 GiB it is
// refused, as it is where the host lacks the memory to write it.
TEST(SimBounds, TheFileAndTheMemoryAreCheckedFirst) {
  const NoPeriodCost cost;
  const CaseSpec spec = case_at("mlp", "flash:1", 512, Shape{1, 1 << 14, 1024, 4096, 0});
  const SimCaseCost one = sim_case_cost(spec, cost);
  EXPECT_EQ(one.plans, 512u);
  EXPECT_EQ(one.stored, 512u);
  const std::vector<CaseSpec> specs(8, spec);
  std::string msg = input_error([&] { check_sim_bounds(specs, cost, true, 2, -1, "sim"); });
  EXPECT_TRUE(contains(msg, "GiB (-o), more than the 1.00 GiB a simulated file may hold")) << msg;
  EXPECT_TRUE(contains(msg, "or leave -o out")) << msg;
  const SimEstimate without = check_sim_bounds(specs, cost, false, 2, -1, "sim");
  EXPECT_EQ(without.file_bytes, 0u);
  msg = input_error([&] { check_sim_bounds(specs, cost, false, 2, int64_t{1} << 20, "sim"); });
  EXPECT_TRUE(contains(msg, "of host memory but 0.00 GiB are free")) << msg;
}

// The whole command: refused with exit 2 within seconds, and no file or journal left.
TEST(SimBounds, TheCommandRefusesBeforeWriting) {
  const TempDir dir;
  const std::string out = dir.file("big.h5");
  const auto t0 = std::chrono::steady_clock::now();
  const CliOutcome got =
      call_cli({"sim", "--tune", "--machine",
                source_file("bench_configs/machines/h100_nvlink_ib.yaml"), "--workload", "ag_gemm",
                "--batch", "1", "--seq", "65536", "--hidden", "8192", "--world", "4096", "-o", out},
               dir.file("err"));
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_EQ(got.code, kExitBadInput) << got.err;
  EXPECT_TRUE(contains(got.err, "task units")) << got.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

}  // namespace
}  // namespace fob
