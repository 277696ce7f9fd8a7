// The mixture-of-experts layer's task kinds, gather and glu: the builder's validation and
// hazards, the CPU kernels on values worked out here, their pricing by elements moved (plan.h's
// memory_elements, the machine model and the simulator) and their --dry-run text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "fob/machine.h"
#include "fob/plan.h"
#include "fob/plan_builder.h"
#include "fob/sim.h"

namespace fob {
namespace {

TEST(RowKinds, AreTheLastKindsAndElementWise) {
  // Results files store kinds by number: the new ones follow softmax_finish.
  EXPECT_EQ(static_cast<int>(TaskKind::gather), static_cast<int>(TaskKind::softmax_finish) + 1);
  EXPECT_EQ(static_cast<int>(TaskKind::glu), kNumTaskKinds - 1);
  EXPECT_STREQ(to_string(TaskKind::gather), "gather");
  EXPECT_STREQ(to_string(TaskKind::glu), "glu");
  for (TaskKind kind : {TaskKind::gather, TaskKind::glu}) {
    const TaskKindInfo info = task_kind_info(kind);
    EXPECT_TRUE(info.elementwise);
    EXPECT_FALSE(info.transfer || info.send_half || info.recv_half);
  }
}

struct Built {
  Plan plan;
  int src = -1, dst = -1;
};

// A 4-row source X and a 5-row destination Xs, both 3 wide.
Built two_buffers() {
  Built b;
  b.plan.world = 2;
  PlanBuilder builder(b.plan);
  b.src = builder.buffer("X", 4, 3);
  b.dst = builder.buffer("Xs", 5, 3);
  return b;
}

void expect_refused(const std::string& what, const std::function<void(PlanBuilder&, Built&)>& f) {
  Built b = two_buffers();
  PlanBuilder builder(b.plan);
  EXPECT_THROW(f(builder, b), std::logic_error) << what;
  EXPECT_TRUE(b.plan.row_maps.empty()) << what << ": a refused gather leaves no map";
}

TEST(RowKinds, GatherRefusesMapsThatDoNotFit) {
  auto gather = [](RowMap map, int64_t src_rows = 4) {
    return [map, src_rows](PlanBuilder& builder, Built& b) {
      builder.gather(View{b.dst, 0, 5}, View{b.src, 0, src_rows}, map, false, "g");
    };
  };
  expect_refused("too few rows", gather({{0, 1, 2, 3}, {}}));
  expect_refused("too many weights", gather({{0, 1, 2, 3, 0}, {1, 1, 1, 1, 1, 1}}));
  expect_refused("a source past the view", gather({{0, 1, 2, 3, 2}, {}}, 3));
  expect_refused("a source below -1", gather({{0, 1, -2, 3, 0}, {}}));
  expect_refused("a destination view past its buffer", [](PlanBuilder& builder, Built& b) {
    builder.gather(View{b.dst, 1, 5}, View{b.src, 0, 4}, {{0, 0, 0, 0, 0}, {}}, false, "g");
  });
  expect_refused("part of a row", [](PlanBuilder& builder, Built& b) {
    builder.gather(View{b.dst, 0, 5, 1, 2}, View{b.src, 0, 4, 1, 2}, {{0, 0, 0, 0, 0}, {}}, false,
                   "g");
  });
  expect_refused("rows it also writes", [](PlanBuilder& builder, Built& b) {
    builder.gather(View{b.dst, 0, 2}, View{b.dst, 1, 3}, {{0, 1}, {}}, false, "g");
  });
  Plan plan;
  PlanBuilder builder(plan);
  const int narrow = builder.buffer("N", 4, 2);
  const int wide = builder.buffer("W", 4, 3);
  EXPECT_THROW(builder.gather(View{wide, 0, 4}, View{narrow, 0, 4}, {{0, 1, 2, 3}, {}}, false, "g"),
               std::logic_error);
}

TEST(RowKinds, GatherKeepsItsMapAndReadsTheWholeSourceView) {
  Built b = two_buffers();
  PlanBuilder builder(b.plan);
  // The comm stream writes row 3 of X; the map never names it, yet the whole view counts.
  const int recv = builder.recv(View{b.src, 3, 1}, 1, 0, "recv");
  const RowMap map{{2, -1, 0, 0, 1}, {1, 0, 2, -1, 3}};
  const int g = builder.gather(View{b.dst, 0, 5}, View{b.src, 0, 4}, map, true, "combine");
  const Task& t = b.plan.tasks[static_cast<size_t>(g)];
  EXPECT_EQ(t.kind, TaskKind::gather);
  EXPECT_EQ(t.m, 5);
  EXPECT_EQ(t.n, 3);
  EXPECT_TRUE(t.accumulate);
  ASSERT_EQ(t.row_map, 0);
  ASSERT_EQ(b.plan.row_maps.size(), 1u);
  EXPECT_EQ(b.plan.row_maps[0].src, map.src);
  EXPECT_EQ(b.plan.row_maps[0].weight, map.weight);
  EXPECT_EQ(t.deps, std::vector<int>{recv});
  // Weighted and accumulating: a multiply and an add per element.
  EXPECT_EQ(t.flops, 2 * 5 * 3);
  // A second gather gets the next map.
  const int second =
      builder.gather(View{b.dst, 0, 5}, View{b.src, 0, 4}, {{0, 0, 0, 0, 0}, {}}, false, "again");
  EXPECT_EQ(b.plan.tasks[static_cast<size_t>(second)].row_map, 1);
  EXPECT_EQ(b.plan.tasks[static_cast<size_t>(second)].flops, 0);
}

TEST(RowKinds, GluWantsTheSameRowsTwiceTheWidth) {
  Plan plan;
  PlanBuilder builder(plan);
  const int up = builder.buffer("U", 4, 6);
  const int h = builder.buffer("H", 4, 3);
  const int odd = builder.buffer("O", 4, 5);
  EXPECT_THROW(builder.glu(View{h, 0, 4}, View{odd, 0, 4}, "g"), std::logic_error);
  EXPECT_THROW(builder.glu(View{h, 0, 3}, View{up, 0, 4}, "g"), std::logic_error);
  EXPECT_THROW(builder.glu(View{h, 0, 4}, View{h, 0, 4}, "g"), std::logic_error);
  const int id = builder.glu(View{h, 1, 3}, View{up, 1, 3}, "act");
  const Task& t = plan.tasks[static_cast<size_t>(id)];
  EXPECT_EQ(t.kind, TaskKind::glu);
  EXPECT_EQ(t.m, 3);
  EXPECT_EQ(t.n, 3);
  EXPECT_EQ(t.flops, 2 * 3 * 3);
}

template <typename T>
void check_gather() {
  // 3 source rows of width 2.
  const std::vector<T> src = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> rows = {2, -1, 0, 2, 1};
  const std::vector<T> before = {10, 10, 20, 20, 30, 30, 40, 40, 50, 50};
  std::vector<T> dst = before;
  cpu::gather_rows<T>(dst.data(), src.data(), rows, {}, 2, false);
  EXPECT_EQ(dst, (std::vector<T>{5, 6, 0, 0, 1, 2, 5, 6, 3, 4}));
  const std::vector<double> weight = {2, 7, -1, 0, 3};
  dst = before;
  cpu::gather_rows<T>(dst.data(), src.data(), rows, weight, 2, false);
  EXPECT_EQ(dst, (std::vector<T>{10, 12, 0, 0, -1, -2, 0, 0, 9, 12}));
  // Accumulating: a row without a source is left as it was.
  dst = before;
  cpu::gather_rows<T>(dst.data(), src.data(), rows, weight, 2, true);
  EXPECT_EQ(dst, (std::vector<T>{20, 22, 20, 20, 29, 28, 40, 40, 59, 62}));
  dst = before;
  cpu::gather_rows<T>(dst.data(), src.data(), rows, {}, 2, true);
  EXPECT_EQ(dst, (std::vector<T>{15, 16, 20, 20, 31, 32, 45, 46, 53, 54}));
}

TEST(RowKinds, CpuGatherPlacesWeighsAndAccumulatesRows) {
  check_gather<float>();
  check_gather<double>();
}

template <typename T>
void check_glu() {
  // Two rows of width 3: gate | up.
  const std::vector<T> src = {-2, 0, 3, 5, 7, 11, 1, -1, 2, -4, 6, -3};
  std::vector<T> dst(6, T(99));
  cpu::glu_rows<T>(dst.data(), src.data(), 2, 3);
  EXPECT_EQ(dst, (std::vector<T>{0, 0, 33, -4, 0, -6}));
}

TEST(RowKinds, CpuGluIsTheGatesReluTimesUp) {
  check_glu<float>();
  check_glu<double>();
}

TEST(RowKinds, PricedByTheElementsTheyMove) {
  Task gather;
  gather.kind = TaskKind::gather;
  gather.m = 5;  // destination rows, whatever the source view's
  gather.n = 3;
  // 5 rows read and written, and the map's index and weight per row.
  EXPECT_EQ(memory_elements(gather), 2 * 15 + 2 * 5);
  gather.accumulate = true;
  EXPECT_EQ(memory_elements(gather), 3 * 15 + 2 * 5);
  Task glu;
  glu.kind = TaskKind::glu;
  glu.m = 4;
  glu.n = 3;
  EXPECT_EQ(memory_elements(glu), 4 * (6 + 3));

  const char* source = std::getenv("FOB_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const Machine machine =
      load_machine(std::string(source) + "/bench_configs/machines/h100_nvlink_ib.yaml");
  const MachineCost cost(machine);
  const double rate = machine.compute.at(DType::fp32).memory_bytes_per_s;
  EXPECT_DOUBLE_EQ(cost.compute_seconds(gather, DType::fp32, 0), 55 * 4 / rate);
  EXPECT_DOUBLE_EQ(cost.compute_seconds(glu, DType::fp32, 0), 36 * 4 / rate);
}

// X[4x3] gathered into Xs[5x3] and back (weighted, accumulating), U[5x6] -> H[5x3] by glu.
Plan moe_steps() {
  Plan plan;
  plan.world = 1;
  PlanBuilder builder(plan);
  const int x = builder.buffer("X", 4, 3);
  const int xs = builder.buffer("Xs", 5, 3);
  const int u = builder.buffer("U", 5, 6);
  const int h = builder.buffer("H", 5, 3);
  builder.gather(View{xs, 0, 5}, View{x, 0, 4}, {{3, 0, 0, -1, 2}, {}}, false, "dispatch");
  builder.glu(View{h, 0, 5}, View{u, 0, 5}, "act");
  builder.gather(View{x, 0, 4}, View{h, 0, 5}, {{0, 1, -1, 4}, {1, 2, 0, 1}}, true, "combine");
  return plan;
}

TEST(RowKinds, DryRunNamesTheirOperands) {
  std::ostringstream out;
  print_plan(out, moe_steps());
  const std::string text = out.str();
  EXPECT_NE(text.find("gather     dispatch  X[0:4] -> Xs[0:5] (=)"), std::string::npos) << text;
  EXPECT_NE(text.find("glu        act  H[0:5] = glu(U[0:5])"), std::string::npos) << text;
  EXPECT_NE(text.find("gather     combine  H[0:5] -> X[0:4] (+=, weighted)"), std::string::npos)
      << text;
}

TEST(RowKinds, SimulatedOneAfterAnotherAtTheirPrice) {
  const char* source = std::getenv("FOB_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const MachineCost cost(
      load_machine(std::string(source) + "/bench_configs/machines/h100_nvlink_ib.yaml"));
  const Plan plan = moe_steps();
  // Each task's launch, then its time at the memory rate.
  double sum = 0;
  for (const Task& t : plan.tasks) {
    sum += cost.launch_seconds(StreamId::compute) + cost.compute_seconds(t, plan.dtype, 0);
  }
  EXPECT_NEAR(simulate_case({plan}, cost, "moe").step(0), sum, 1e-15);
}

}  // namespace
}  // namespace fob
