// docs/EXTENDING.md#a-strategy's promise, tested: a strategy is one file and its table entry
// (or, outside fobench's sources, one register_strategy call). A toy strategy defined here —
// slicing's halves under another name, role and tuning list — is run and verified by the executor
// on the CPU backend (mpirun -np 2), gets its metrics in the summary and the report, offers its
// --auto-slices candidates, is simulated on a machine file and takes part in calibrate, with no
// other change anywhere.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/mpi_gtest.h"
#include "../common/toy_checks.h"
#include "fob/cases.h"
#include "fob/config.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/workload.h"

namespace fob {
namespace {

const Strategy& toy() {
  static const Strategy strategy = [] {
    const Strategy& slicing = *parse_strategy("slicing").strategy;
    return Strategy{.name = "toy",
                    .summary = "a test's strategy: slicing's halves under its own name",
                    .param_name = "P",
                    .default_param = 2,
                    .role = StrategyRole::overlapping,
                    .tune_params = {1, 3},
                    .all_gather_gemm = slicing.all_gather_gemm,
                    .gemm_reduce_scatter = slicing.gemm_reduce_scatter,
                    .all_gather_blocks = slicing.all_gather_blocks};
  }();
  return strategy;
}

std::vector<CaseSpec> toy_cases(int world) {
  Config config;
  config.workload = find_workload("mlp");
  config.shape = {2, 96, 48, 120};  // M = 192 and F = 120 divide by 1..4 ranks and 2 pieces
  config.strategies = {"baseline", "toy:2"};
  return make_cases(config, world);
}

TEST(ToyStrategy, IsKnownEverywhereOnceRegistered) {
  EXPECT_EQ(parse_strategy("toy:3").param, 3);
  EXPECT_NE(strategy_choices().find("toy[:P]"), std::string::npos) << strategy_choices();
  EXPECT_EQ(strategy_role("toy:2"), StrategyRole::overlapping);
  EXPECT_EQ(parse_strategy("toy").strategy->tuning(), (std::vector<int>{1, 3}));
  EXPECT_THROW(register_strategy(toy()), std::logic_error);
}

TEST(ToyStrategy, RunsReportsSimulatesAndCalibrates) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const std::vector<CaseSpec> specs = toy_cases(world);
  ASSERT_EQ(specs.size(), 4u);  // compute_only, comm_only, baseline, toy:2
  EXPECT_EQ(specs.back().strategy.text, "toy:2");

  const ResultFile file = run_toy_cases(specs, rank, world);
  if (rank != 0) return;  // the results are gathered on rank 0
  for (const CaseResult& c : file.cases) EXPECT_EQ(c.verified, 1) << c.strategy;

  // The report's metrics: the toy is measured against the baseline and the bound.
  const std::vector<Summary> summary = summarize(file.cases);
  ASSERT_EQ(summary.back().strategy, "toy:2");
  EXPECT_TRUE(std::isfinite(summary.back().t_lb));
  if (world > 1) {
    EXPECT_TRUE(std::isfinite(summary.back().speedup));
  }
  std::ostringstream report;
  write_report(report, file, parse_table_format("md"));
  EXPECT_NE(report.str().find("toy:2"), std::string::npos);

  expect_simulated_and_calibrated(file, specs.back(), world);
}

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // The one line a new strategy needs, here a call since the test is outside fobench's sources.
  fob::register_strategy(fob::toy());
  const int failed = fob::run_tests_on_every_rank();
  MPI_Finalize();
  return failed;
}
