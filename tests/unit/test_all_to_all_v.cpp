// The uneven all-to-all (PeerSpans, PlanBuilder::all_to_all_v) as plan data: the builder's
// bytes, regions and refusals; transfer_messages pairing every rank's sends with its peers'
// receives in posting order; the even form read through the same blocks; and the simulator
// pricing each pairwise step by its slowest link's block.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../common/uneven_all_to_all.h"
#include "fob/plan_builder.h"
#include "fob/sim.h"
#include "fob/transfer_messages.h"
#include "fob/workload.h"

namespace fob {
namespace {

using test::toy_all_to_all_plan;
using test::toy_rows;
using Role = Message::Role;
constexpr int64_t kWidth = 6;

std::vector<Plan> toy_plans(int world) {
  std::vector<Plan> plans;
  for (int r = 0; r < world; ++r) {
    plans.push_back(toy_all_to_all_plan(r, world, kWidth, find_workload("mlp")));
  }
  return plans;
}

Plan empty_plan(int rank, int world) {
  Plan plan;
  plan.world = world;
  plan.rank = rank;
  return plan;
}

const Task& collective_of(const Plan& plan) {
  for (const Task& t : plan.tasks) {
    if (t.kind == TaskKind::collective) return t;
  }
  throw std::logic_error("no collective");
}

TEST(AllToAllV, CountsTheBytesSentToPeersOnly) {
  for (int world = 1; world <= 5; ++world) {
    for (const Plan& p : toy_plans(world)) {
      const Task& t = collective_of(p);
      int64_t rows = 0;
      for (int j = 0; j < world; ++j) rows += j == p.rank ? 0 : toy_rows(p.rank, j);
      EXPECT_EQ(t.bytes, rows * kWidth * 4) << "rank " << p.rank << " of " << world;
      const std::vector<int64_t> sent = all_to_all_sent_bytes(p, t);
      for (int j = 0; j < world; ++j) {
        EXPECT_EQ(sent[j], j == p.rank ? 0 : toy_rows(p.rank, j) * kWidth * 4);
      }
    }
  }
}

TEST(AllToAllV, EverySendMeetsAReceiveOfItsRowsInPostingOrder) {
  for (int world = 1; world <= 5; ++world) {
    std::map<std::pair<int, int>, std::vector<int64_t>> sent, expected;
    int64_t copied = 0;
    for (const Plan& p : toy_plans(world)) {
      for (const Message& m : transfer_messages(p, collective_of(p))) {
        if (m.role == Role::send) sent[{p.rank, m.peer}].push_back(m.view.rows);
        if (m.role == Role::receive) expected[{m.peer, p.rank}].push_back(m.view.rows);
        if (m.role == Role::local) {
          EXPECT_EQ(m.view.rows, m.from.rows);
          copied += m.view.rows;
        }
      }
    }
    EXPECT_EQ(sent, expected) << world << " ranks";
    int64_t own = 0;
    for (int r = 0; r < world; ++r) own += toy_rows(r, r);
    EXPECT_EQ(copied, own);
    for (const auto& [pair, rows] : sent) {
      int64_t sum = 0;
      for (int64_t n : rows) sum += n;
      EXPECT_EQ(sum, toy_rows(pair.first, pair.second));
    }
  }
}

TEST(AllToAllV, LaterTasksWaitForTheRowsItReadsAndWrites) {
  Plan plan = empty_plan(1, 3);
  PlanBuilder b(plan);
  const int src = b.buffer("S", test::toy_send_rows(1, 3), kWidth);
  const int dst = b.buffer("R", test::toy_recv_rows(1, 3), kWidth);
  const int out = b.buffer("out", 1, kWidth);
  const int a2a = b.all_to_all_v(src, dst, test::toy_spans(1, 3), "a2av");
  // Row 8 of R is the last of rank 0's rest; rank 1's first row of S goes to rank 0.
  const int read = b.copy(View{out, 0, 1, 0, 0}, View{dst, 8, 1, 0, 0}, "read R");
  const int write = b.copy(View{src, 0, 1, 0, 0}, View{out, 0, 1, 0, 0}, "write S");
  EXPECT_EQ(plan.tasks[static_cast<size_t>(read)].deps, std::vector<int>{a2a});
  EXPECT_EQ(plan.tasks[static_cast<size_t>(write)].deps, std::vector<int>{a2a});
}

TEST(AllToAllV, PrintsTheRowsToAndFromEachRank) {
  const Plan plan = toy_all_to_all_plan(1, 3, kWidth, find_workload("mlp"));
  std::ostringstream out;
  print_plan(out, plan);
  const std::string text = out.str();
  // Rank 1 sends rank 0 2 rows, itself 2 and rank 2 none; it receives 3 from rank 0 and 4
  // from rank 2.
  EXPECT_NE(text.find("S -> R, rows per rank: out 2/2/0 in 3/2/4"), std::string::npos) << text;
}

TEST(AllToAllV, RefusesSpansThatCannotPair) {
  Plan plan = empty_plan(0, 2);
  PlanBuilder b(plan);
  const int src = b.buffer("S", 4, kWidth), dst = b.buffer("R", 4, kWidth);
  const int narrow = b.buffer("N", 4, kWidth - 1);
  PeerSpans ok{{{{0, 1}}, {{1, 3}}}, {{{0, 1}}, {{1, 3}}}};
  EXPECT_THROW(b.all_to_all_v(src, narrow, ok, "widths"), std::logic_error);
  PeerSpans one_list{{{{0, 1}}}, {{{0, 1}}}};
  EXPECT_THROW(b.all_to_all_v(src, dst, one_list, "lists"), std::logic_error);
  PeerSpans outside = ok;
  outside.recv[1] = {{2, 3}};
  EXPECT_THROW(b.all_to_all_v(src, dst, outside, "outside"), std::logic_error);
  PeerSpans empty_span = ok;
  empty_span.send[1] = {{1, 0}};
  EXPECT_THROW(b.all_to_all_v(src, dst, empty_span, "empty"), std::logic_error);
  PeerSpans own_differs = ok;
  own_differs.recv[0] = {{0, 2}};
  EXPECT_THROW(b.all_to_all_v(src, dst, own_differs, "own"), std::logic_error);
  EXPECT_NO_THROW(b.all_to_all_v(src, dst, ok, "ok"));
  EXPECT_EQ(plan.peer_spans.size(), 1u);
}

// The even form's block for peer j is `batch` chunks a step apart, in either buffer.
TEST(AllToAllV, ReadsTheEvenFormAsSpans) {
  Plan plan = empty_plan(1, 3);
  PlanBuilder b(plan);
  const int src = b.buffer("S", 12, kWidth), dst = b.buffer("R", 24, kWidth);
  PlanBuilder::AllToAll args;
  args.src = src;
  args.src_stride = 2;
  args.src_step = 6;
  args.dst = dst;
  args.dst_row = 1;
  args.dst_stride = 3;
  args.dst_step = 10;
  args.rows = 2;
  args.batch = 2;
  b.all_to_all(args, "even");
  const PeerSpans blocks = all_to_all_blocks(plan, plan.tasks.back());
  for (int j = 0; j < 3; ++j) {
    ASSERT_EQ(blocks.send[j].size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(blocks.send[j][i].row, j * 2 + i * 6);
      EXPECT_EQ(blocks.recv[j][i].row, 1 + j * 3 + i * 10);
      EXPECT_EQ(blocks.send[j][i].rows, 2);
      EXPECT_EQ(blocks.recv[j][i].rows, 2);
    }
  }
}

// Step s of the pairwise schedule waits for the largest block any rank sends s ranks on, so
// with latency L and bandwidth B the collective takes sum over s of (L + that block / B).
TEST(AllToAllV, SimulatorPricesEachStepByItsLargestBlock) {
  for (int world : {2, 3, 4}) {
    const double latency = 1e-6, bandwidth = 1e9;
    const UniformCost cost(1e12, 1e12, latency, bandwidth);
    const double step = simulate_case(toy_plans(world), cost, "v").step(0);
    double expected = 0;
    for (int s = 1; s < world; ++s) {
      int64_t largest = 0;
      for (int r = 0; r < world; ++r) largest = std::max(largest, toy_rows(r, (r + s) % world));
      if (largest > 0) expected += latency + static_cast<double>(largest * kWidth * 4) / bandwidth;
    }
    EXPECT_NEAR(step, expected, 1e-9 * expected) << world << " ranks";
  }
}

}  // namespace
}  // namespace fob
