// Structural invariants of the mixture-of-experts layer's plans (workload moe) for every strategy
// that runs it, at worlds 1..8: every strategy computes the same expert GEMMs and moves the same
// token copies; the transfer counts of each strategy; Flash's rank-adaptive order (the first
// expert GEMM waits for no transfer, no GEMM for a combine); and the same at the odd settings
// the issue names (experts no world divides, top-1, a capacity that drops, an empty expert).
#include <map>
#include <utility>

#include "fob/moe.h"
#include "fob/moe_load.h"
#include "fob/transfer_messages.h"
#include "plan_invariants.h"

namespace fob::plan_test {
namespace {

class MoePlans : public PlanInvariants {
 protected:
  MoeRouting routing() const { return route_tokens(moe_router(spec_.shape, world_)); }
};
INSTANTIATE_PLAN_SUITE(MoePlans,
                       [](Workload w, const Strategy&) { return (w->patterns & kMoeLayer) != 0; });

// Each received token copy costs its expert 2 * D * 2F (up) + 2 * F * D (down) flops.
TEST_P(MoePlans, EveryStrategyComputesTheSameExpertGemms) {
  for_each_world([&] {
    const MoeRouting route = routing();
    const double d = static_cast<double>(geometry_.d), f = static_cast<double>(geometry_.f);
    for (const Plan& p : plans_) {
      const MoeLayout layout = moe_layout(route, p.rank, 1);
      double flops = 0;
      for (const Task& t : p.tasks) flops += t.kind == TaskKind::gemm ? t.flops : 0.0;
      const double expected =
          is_("comm_only") ? 0.0 : static_cast<double>(layout.recv_total()) * 6.0 * d * f;
      EXPECT_DOUBLE_EQ(flops, expected) << "rank " << p.rank;
    }
  });
}

// Every kept copy that leaves its rank crosses the wire twice (dispatch and combine): no
// strategy moves more or less.
TEST_P(MoePlans, EveryStrategyMovesEachCopyOutAndBack) {
  for_each_world([&] {
    if (is_("compute_only")) return;
    const MoeRouting route = routing();
    for (const Plan& p : plans_) {
      const MoeLayout layout = moe_layout(route, p.rank, 1);
      int64_t expected = 0;
      for (int64_t j = 0; j < world_; ++j) {
        for (int64_t l = 0; l < moe_local_experts(route.experts, world_, j); ++l) {
          if (j != p.rank) expected += layout.send_rows(0, j, l);
        }
        for (int64_t l = 0; l < layout.local_experts; ++l) {
          if (j != p.rank) expected += layout.recv_rows(l, 0, j);
        }
      }
      int64_t bytes = 0;
      for (const Task& t : p.tasks) bytes += t.is_transfer() ? t.bytes : 0;
      EXPECT_EQ(bytes, expected * geometry_.d * 4) << "rank " << p.rank;
    }
  });
}

// The load a results file records (moe_load): the router's counts, and the bytes each rank's
// dispatch and combine bring it from the others, whatever the strategy (none for compute_only).
TEST_P(MoePlans, TheLoadIsTheRoutersAndEachRankReceivesItsCopies) {
  for_each_world([&] {
    const MoeRouting route = routing();
    std::vector<const Plan*> ranks;
    for (const Plan& p : plans_) ranks.push_back(&p);
    const MoeLoad load = moe_load(ranks);
    const int64_t n = world_, e_count = route.experts;
    ASSERT_EQ(load.world(), n);
    EXPECT_EQ(load.dropped, route.dropped);
    for (int64_t i = 0; i < n; ++i) {
      int64_t in = 0, back = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t taken = 0;
        for (int64_t e = j; e < e_count; e += n) taken += route.kept[i * e_count + e];
        EXPECT_EQ(load.token_matrix[i * n + j], taken) << i << " to " << j;
        if (j != i) in += load.token_matrix[j * n + i], back += load.token_matrix[i * n + j];
      }
      const int64_t row = is_("compute_only") ? 0 : geometry_.d * 4;
      EXPECT_EQ(load.dispatch_bytes[i], in * row) << "rank " << i;
      EXPECT_EQ(load.combine_bytes[i], back * row) << "rank " << i;
    }
    EXPECT_EQ(moe_load_problem(load, n, e_count, route.tokens, route.top_k), "");
  });
}

TEST_P(MoePlans, TransferCounts) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      int collectives = 0, exchanges = 0;
      for (const Task& t : p.tasks) {
        collectives += t.kind == TaskKind::collective;
        exchanges += t.kind == TaskKind::exchange;
      }
      if (is_("compute_only")) {
        EXPECT_EQ(collectives + exchanges, 0);
      } else if (is_("flash") || is_("flash_direct")) {
        // Dispatch and combine, m pieces a step; a piece with nothing either way is no task.
        EXPECT_EQ(collectives, 0);
        EXPECT_LE(exchanges, 2 * param_ * (world_ - 1));
      } else {
        EXPECT_EQ(exchanges, 0);
        EXPECT_EQ(collectives, 2 * (is_("slicing") ? param_ : 1));
      }
    }
  });
}

// Flash: the own tokens' first GEMM waits for nothing, and the experts never wait for a combine
// (only the weighted sum does), so each source's results leave while the next one computes.
TEST_P(MoePlans, FlashStartsFreeAndNeverWaitsForTheCombine) {
  for_each_world([&] {
    if (!is_("flash") && !is_("flash_direct")) return;
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      bool first = true;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::gemm) continue;
        if (first) {
          EXPECT_FALSE(waits_for_transfer(p, closure, t.id)) << describe(p, t.id);
        }
        first = false;
        for (const Task& u : p.tasks) {
          if (closure[t.id][u.id] && u.is_transfer()) {
            EXPECT_EQ(u.label.rfind("combine", 0), std::string::npos)
                << describe(p, t.id) << " waits for " << describe(p, u.id);
          }
        }
      }
    }
  });
}

// Flash: the own tokens' second half is computed last, beside the last combine, whose results
// are the only ones that still travel (CommFuse's order). A rank with a single own-token GEMM
// spends it first.
TEST_P(MoePlans, FlashEndsOnOwnTokensBesideTheLastTransfer) {
  for_each_world([&] {
    if ((!is_("flash") && !is_("flash_direct")) || world_ < 2) return;
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      int free_gemms = 0, last_transfer = -1;
      for (const Task& t : p.tasks) {
        if (t.is_transfer()) last_transfer = t.id;
        free_gemms += t.kind == TaskKind::gemm && !waits_for_transfer(p, closure, t.id);
      }
      int beside = 0;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::gemm || t.id < last_transfer || last_transfer < 0) continue;
        ++beside;
        EXPECT_FALSE(closure[t.id][last_transfer])
            << describe(p, t.id) << " waits for the last transfer " << describe(p, last_transfer);
      }
      // Each own half is an up and a down GEMM per expert it reaches: with four own GEMMs or
      // more, both halves have some.
      if (free_gemms >= 4) {
        EXPECT_GT(beside, 0) << "rank " << p.rank << ": no GEMM beside the last transfer";
      }
    }
  });
}

// The odd settings of moe's check shape (5 experts, which no world of 2 to 4 divides; a
// capacity that drops choices; a skew that leaves an expert without tokens), at top-1 and
// top-2: every message a rank sends meets a receive of its size in posting order.
TEST(MoePlansOdd, MessagesPairAtOddSettings) {
  const Workload moe = find_workload("moe");
  ASSERT_NE(moe, nullptr);
  for (int64_t top_k : {1, 2}) {
    for (int world = 1; world <= 4; ++world) {
      for (const std::string& s : strategies_for(moe)) {
        CaseSpec spec = test_case(moe, s, world, DType::fp32);
        spec.shape.moe.top_k = top_k;
        std::map<std::pair<int, int>, std::vector<int64_t>> sent, expected;
        for (const Plan& p : make_plans(spec)) {
          for (const Task& t : p.tasks) {
            for (const Message& m : transfer_messages(p, t)) {
              if (m.role == Message::Role::send) sent[{p.rank, m.peer}].push_back(m.view.rows);
              if (m.role == Message::Role::receive) {
                expected[{m.peer, p.rank}].push_back(m.view.rows);
              }
            }
          }
        }
        EXPECT_EQ(sent, expected) << s << " N=" << world << " k=" << top_k;
      }
    }
  }
}

}  // namespace
}  // namespace fob::plan_test
