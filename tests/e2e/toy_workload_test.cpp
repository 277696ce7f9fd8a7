// docs/EXTENDING.md#a-workload's promise, tested: a workload is one file under
// src/workloads/ and its entry in the workload table (or, outside fobench's sources, one
// register_workload call). A toy workload defined here — a square all-gather GEMM over tensors
// of its own, with its own oracle and tolerance — is known to the parsers, planned, run and
// verified by the executor on the CPU backend (mpirun -np 2), reported, simulated on a machine
// file and calibrated, with no other change anywhere.
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
#include "fob/inputs.h"
#include "fob/layer.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/workload.h"

namespace fob {
namespace {

int g_tolerance_calls = 0;

// Y_r = AllGather(XS)[M, D] * WS[D, D] columns r: the weight is square, whatever ffn says.
Geometry square_geometry(const Shape& shape) {
  Geometry g = layer_geometry(shape);
  g.f = shape.hidden;
  g.f_key = "hidden";
  g.x = "XS";
  g.w1 = "WS";
  return g;
}

// The toy's own oracle, in plain loops over the inputs' values.
std::vector<double> square_expected(const Plan& plan, const OutputCheck& check, uint64_t seed) {
  const int64_t m = plan.shape.tokens(), d = plan.shape.hidden, cols = d / plan.world;
  const int64_t col0 = plan.rank * cols, period = plan.input_period;
  std::vector<double> out;
  for (int64_t i = 0; i < m; ++i) {
    if (check.kind == CheckKind::gathered) {
      for (int64_t k = 0; k < d; ++k) out.push_back(input_value(seed, "XS", i, k, 0, period));
      continue;
    }
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < d; ++k) {
        sum += input_value(seed, "XS", i, k, 0, period) *
               input_value(seed, "WS", k, col0 + j, 0, period);
      }
      out.push_back(sum);
    }
  }
  return out;
}

Tolerance square_tolerance(const Plan& plan, CheckKind /*kind*/) {
  ++g_tolerance_calls;
  return {verify_tolerance(plan.dtype, plan.world), false};
}

constexpr WorkloadDef kSquare = {
    .name = "toy_square",
    .summary = "a test's workload: a square all-gather GEMM",
    .geometry = square_geometry,
    .build = build_all_gather_gemm,
    .patterns = kAllGatherGemm,
    .expected = square_expected,
    .tolerance = square_tolerance,
    .check_shape = Shape{2, 48, 24, 24, 0},
};

std::vector<CaseSpec> toy_cases(int world) {
  Config config;
  config.workload = parse_workload("toy_square");
  config.shape = {2, 48, 24, 100};  // ffn is not the toy's: its weight is hidden x hidden
  config.strategies = {"baseline", "flash", "slicing:2"};
  return make_cases(config, world);
}

TEST(ToyWorkload, IsKnownEverywhereOnceRegistered) {
  EXPECT_EQ(parse_workload("toy_square"), &kSquare);
  EXPECT_NE(workload_choices().find("toy_square"), std::string::npos) << workload_choices();
  EXPECT_EQ(all_workloads().back(), &kSquare);
  EXPECT_FALSE(has_heads("toy_square"));
  // The strategies that have its one pattern apply; the query split, which needs a computed H,
  // does not.
  EXPECT_TRUE(strategy_applies(*parse_strategy("flash").strategy, &kSquare));
  EXPECT_FALSE(strategy_applies(*parse_strategy("flash_qs").strategy, &kSquare));
  EXPECT_NE(applicable_workloads(*parse_strategy("decompose").strategy).find("toy_square"),
            std::string::npos);
  EXPECT_THROW(register_workload(kSquare), std::logic_error);
  // Its geometry's split extents are checked by the shared validation, its keys named.
  CaseSpec bad;
  bad.workload = &kSquare;
  bad.shape = {1, 10, 25, 4};
  bad.world = 2;
  bad.strategy = parse_strategy("baseline");
  try {
    validate_case(bad);
    ADD_FAILURE() << "hidden 25 over 2 ranks was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hidden: 25"), std::string::npos) << e.what();
  }
}

TEST(ToyWorkload, RunsVerifiesReportsSimulatesAndCalibrates) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const std::vector<CaseSpec> specs = toy_cases(world);
  ASSERT_EQ(specs.size(), 5u);  // compute_only, comm_only, baseline, flash, slicing:2

  const Plan plan = make_plan(specs.back(), rank);
  EXPECT_EQ(plan.buffers[static_cast<size_t>(plan.buffer_id("w1"))].cols, 24 / world);
  const ResultFile file = run_toy_cases(specs, rank, world);
  EXPECT_GT(g_tolerance_calls, 0);  // verification asked the toy for its tolerances
  if (rank != 0) return;            // the results are gathered on rank 0
  for (const CaseResult& c : file.cases) {
    EXPECT_EQ(c.verified, 1) << c.strategy;
    EXPECT_EQ(c.workload, "toy_square");
  }

  const std::vector<Summary> summary = summarize(file.cases);
  ASSERT_FALSE(summary.empty());
  EXPECT_TRUE(std::isfinite(summary.back().t_lb));
  std::ostringstream report;
  write_report(report, file, parse_table_format("md"));
  EXPECT_NE(report.str().find("toy_square"), std::string::npos) << report.str();

  expect_simulated_and_calibrated(file, specs.back(), world);
}

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // The one line a new workload needs, here a call since the test is outside fobench's sources.
  fob::register_workload(fob::kSquare);
  const int failed = fob::run_tests_on_every_rank();
  MPI_Finalize();
  return failed;
}
