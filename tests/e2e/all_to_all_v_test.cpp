// The uneven all-to-all under MPI (mpirun -np 2 and 3): the toy all-to-all-v of
// tests/common/uneven_all_to_all.h, whose pairs send 0 to 4 rows as spans laid out differently
// on either side, run by the executor and every received row checked against the input row its
// source sent. On the CPU backend plain and over an emulated link; with --cuda=TRANSPORT on the
// cuda backend (the cuda_model tier runs it on the model over nccl and mpi).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/mpi_gtest.h"
#include "../common/uneven_all_to_all.h"
#include "fob/backend.h"
#include "fob/executor.h"
#include "fob/inputs.h"
#include "fob/layer.h"
#include "fob/workload.h"

namespace fob {
namespace {

std::string g_cuda_transport;  // empty: the CPU backend

// "R" holds, row by row, the input rows toy_received_rows names, as wide as the hidden size.
std::vector<double> received_expected(const Plan& plan, const OutputCheck& /*check*/,
                                      uint64_t seed) {
  std::vector<double> out;
  for (int64_t row : test::toy_received_rows(plan.rank, plan.world)) {
    for (int64_t col = 0; col < plan.shape.hidden; ++col) {
      out.push_back(input_value(seed, "XA", row, col));
    }
  }
  return out;
}

void build_toy(PlanBuilder& b, const CaseSpec& spec, const Geometry& /*g*/) {
  test::build_toy_all_to_all(b, spec.shape.hidden);
}

// A workload of the toy's one collective, registered as any workload is, so that the executor
// plans every rank's task table and verifies by its oracle; every strategy plans it alike.
constexpr WorkloadDef kToy = {
    .name = "toy_all_to_all_v",
    .summary = "a test's plan: one uneven all-to-all",
    .geometry = layer_geometry,
    .build = build_toy,
    .expected = received_expected,
};

CaseSpec toy_case(int world) {
  CaseSpec spec;
  spec.workload = &kToy;
  spec.shape = {1, 192, 12, 12, 0};
  spec.world = world;
  spec.strategy = parse_strategy("baseline");
  return spec;
}

class AllToAllV : public ::testing::TestWithParam<bool> {};

TEST_P(AllToAllV, EveryRowArrivesWhereItsSpanSays) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  BackendOptions backend_options;
  std::unique_ptr<Backend> backend;
  if (!g_cuda_transport.empty()) {
    if (GetParam()) GTEST_SKIP() << "the link is emulated on the CPU backend";
    backend_options.transport = g_cuda_transport;
    backend = make_cuda_backend(backend_options);
  } else {
    if (GetParam()) backend_options.link = {10, 5};  // Gbit/s, microseconds
    backend = make_cpu_backend(backend_options);
  }
  Executor executor(*backend, MPI_COMM_WORLD);
  const Plan plan = make_plan(toy_case(world), rank);
  ExecOptions options;
  options.iters = 3;
  options.warmup = 1;
  options.timeout_s = 60;
  const CaseResult r = executor.run_case(plan, options, "v");
  EXPECT_EQ(r.verified, 1);
  EXPECT_EQ(r.max_abs_err, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Link, AllToAllV, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "emulated" : "direct"; });

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  const std::string flag = "--cuda=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag, 0) == 0) fob::g_cuda_transport = arg.substr(flag.size());
  }
  fob::register_workload(fob::kToy);
  return fob::mpi_gtest_main(argc, argv);
}
