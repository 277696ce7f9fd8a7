// Structural invariants of every strategy's plans (docs/method.md), for every workload
// and world size 1..8: GEMM work, transfer counts, the ordering properties that separate
// Flash-Overlap from the lock-stepped decomposition, attention's heads and query split, the
// reference modes (the schedule's invariants: test_plans_schedule.cpp); and validate_case's and
// parse_strategy's messages.
#include "plan_invariants.h"

namespace fob::plan_test {
namespace {

// The workloads of AG/RS halves (ulysses: test_plans_ulysses.cpp; moe: test_plans_moe.cpp),
// with every strategy but those without GEMMs (comm_only).
bool has_halves(Workload w) {
  return !(w->patterns & (kGemmAllToAll | kMoeLayer));
}

class HalvesComputed : public PlanInvariants {};
INSTANTIATE_PLAN_SUITE(HalvesComputed, [](Workload w, const Strategy& s) {
  return !named(s, "comm_only") && has_halves(w);
});

TEST_P(HalvesComputed, GemmFlopsPerHalf) {
  for_each_world([&] {
    const double expected = 2.0 * static_cast<double>(tokens_) * static_cast<double>(geometry_.d) *
                            static_cast<double>(ffn_local_);
    for (const Plan& p : plans_) {
      const int x = p.buffer_id("x");
      const int h = has_rs() ? h_buffer(p) : -1;
      double ag = 0, rs = 0, grads = 0, attention = 0;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::gemm) continue;
        EXPECT_DOUBLE_EQ(t.flops, 2.0 * static_cast<double>(t.m * t.n * t.k) * t.batch)
            << describe(p, t.id);
        if (is_weight_gradient(p, t)) {
          grads += t.flops;  // mlp_bwd's dW1 and dW2: each as large as one half
        } else if (is_attention(p, t)) {
          attention += t.flops;
        } else if (has_ag() && t.a.buffer == x) {
          ag += t.flops;
        } else if (has_rs() && t.a.buffer == h) {
          rs += t.flops;
        } else {
          ADD_FAILURE() << describe(p, t.id) << " belongs to neither half";
        }
      }
      // attn's all-gather GEMM makes Q, K and V: three times the width of the reduce-scatter's
      // contraction. Scores and P V each cost 2 * M * seq * D/N.
      const double ag_expected = expected * static_cast<double>(geometry_.ag_f / geometry_.f);
      EXPECT_DOUBLE_EQ(ag, has_ag() ? ag_expected : 0.0) << "AG flops on rank " << p.rank;
      const double attention_expected = 4.0 * static_cast<double>(tokens_) *
                                        static_cast<double>(geometry_.seq) *
                                        static_cast<double>(ffn_local_);
      EXPECT_DOUBLE_EQ(attention, layout_.attention ? attention_expected : 0.0)
          << "attention GEMM flops on rank " << p.rank;
      EXPECT_DOUBLE_EQ(rs, has_rs() ? expected : 0.0) << "RS flops on rank " << p.rank;
      EXPECT_DOUBLE_EQ(grads, layout_.backward ? 2 * expected : 0.0) << "on rank " << p.rank;
    }
  });
}

// 5 and 6. How many transfers each strategy makes, of which kind.
// ulysses' transfers are counted in test_plans_ulysses.cpp.
struct TaskCounts {
  int exchanges = 0, collectives = 0, p2p_other = 0, gemms = 0, ag_exchanges = 0;
};

class Halves : public PlanInvariants {
 protected:
  TaskCounts counts(const Plan& p) const {
    TaskCounts c;
    for (const Task& t : p.tasks) {
      if (t.kind == TaskKind::exchange) {
        ++c.exchanges;
        if (in_ag(p, t)) ++c.ag_exchanges;
      }
      c.collectives += t.kind == TaskKind::collective;
      c.p2p_other += t.kind == TaskKind::send || t.kind == TaskKind::recv;
      c.gemms += t.kind == TaskKind::gemm;
    }
    return c;
  }

  // The counts of the built-in strategies; `halves` collectives (or rings of exchanges) a step.
  void expect_counts(const TaskCounts& c, int halves, const std::string& where) const {
    const int n = world_;
    if (is_("flash") || is_("flash_direct") || is_("flash_qs")) {
      EXPECT_EQ(c.collectives, 0) << where;
      EXPECT_EQ(c.exchanges, halves * param_ * (n - 1)) << where;
      EXPECT_EQ(c.ag_exchanges, has_ag() ? param_ * (n - 1) : 0) << where;
    } else if (is_("decompose")) {
      EXPECT_EQ(c.collectives, 0) << where;
      const int ag = has_ag() ? n - 1 : 0;
      const int rs = has_rs() && n > 1 ? n : 0;
      const int ar = layout_.all_reduce || layout_.backward ? n - 1 : 0;
      EXPECT_EQ(c.exchanges, ag + rs + ar) << where;
      EXPECT_EQ(c.ag_exchanges, ag) << where;
    } else if (is_("slicing") || is_("baseline") || is_("comm_only")) {
      EXPECT_EQ(c.exchanges, 0) << where;
      EXPECT_EQ(c.collectives, n > 1 ? halves * param_ : 0) << where;
    } else if (is_("compute_only")) {
      EXPECT_EQ(c.exchanges + c.collectives, 0) << where;
    } else if (n > 1) {
      // A strategy without counts of its own here still moves its halves' data; its exact
      // counts, once known, belong above.
      EXPECT_GT(c.exchanges + c.collectives, 0) << where << ": " << spec_text_ << " moves nothing";
    }
  }
};
INSTANTIATE_PLAN_SUITE(Halves, [](Workload w, const Strategy&) { return has_halves(w); });

TEST_P(Halves, TransferCounts) {
  for_each_world([&] {
    // gemm_ar's all-reduce counts as two collectives (reduce-scatter and all-gather), and so
    // does mlp_bwd's second gather of X.
    const int halves =
        (has_ag() ? 1 : 0) + (has_rs() ? 1 : 0) + (layout_.all_reduce || layout_.backward ? 1 : 0);
    for (const Plan& p : plans_) {
      const TaskCounts c = counts(p);
      const std::string where = "rank " + std::to_string(p.rank);
      EXPECT_EQ(c.p2p_other, 0) << where;
      expect_counts(c, halves, where);
      if (is_("comm_only")) {
        EXPECT_EQ(c.gemms, 0) << where;
      } else {
        EXPECT_GT(c.gemms, 0) << where;
      }
    }
  });
}

// 4. Flash's rank-adaptive order: the first AG GEMM touches no communication, the first RS
// GEMM (gemm_rs) neither, and the last GEMM never waits for the plan's last transfer, which
// therefore overlaps with it (only a local add is exposed). flash_direct's RS GEMMs never wait
// for a transfer at all.
using Closure = std::vector<std::vector<bool>>;

struct Landmarks {
  int first_ag = -1, first_rs = -1, last_gemm = -1, last_transfer = -1;
};

class FlashPlans : public PlanInvariants {
 protected:
  // The first GEMM of each half, the last of the halves' GEMMs and the last transfer.
  Landmarks landmarks(const Plan& p) const {
    Landmarks m;
    const int x = p.buffer_id("x");
    const int h = has_rs() ? h_buffer(p) : -1;
    for (const Task& t : p.tasks) {
      // The weight gradients follow the collectives they need; the property is the halves'.
      if (t.kind == TaskKind::gemm && !is_weight_gradient(p, t)) {
        m.last_gemm = t.id;
        if (has_ag() && t.a.buffer == x && m.first_ag < 0) m.first_ag = t.id;
        if (has_rs() && t.a.buffer == h && m.first_rs < 0) m.first_rs = t.id;
      }
      if (t.is_transfer()) m.last_transfer = t.id;
    }
    return m;
  }

  // The first computation waits for nothing, and for no transfer at all.
  static void expect_starts_free(const Plan& p, const Closure& closure, int first) {
    ASSERT_GE(first, 0);
    EXPECT_TRUE(p.tasks[static_cast<size_t>(first)].deps.empty()) << describe(p, first);
    EXPECT_FALSE(waits_for_transfer(p, closure, first)) << describe(p, first);
  }

  // The last computation waits directly for no transfer, and not even indirectly for the last.
  static void expect_ends_free(const Plan& p, const Closure& closure, const Landmarks& m) {
    for (int d : p.tasks[static_cast<size_t>(m.last_gemm)].deps) {
      EXPECT_FALSE(p.tasks[static_cast<size_t>(d)].is_transfer())
          << describe(p, m.last_gemm) << " waits directly for " << describe(p, d);
    }
    if (m.last_transfer >= 0) {
      EXPECT_FALSE(closure[static_cast<size_t>(m.last_gemm)][static_cast<size_t>(m.last_transfer)])
          << describe(p, m.last_gemm) << " waits for the last transfer "
          << describe(p, m.last_transfer);
    }
  }
};
INSTANTIATE_PLAN_SUITE(FlashPlans, [](Workload w, const Strategy& s) {
  return !(w->patterns & kMoeLayer) &&
         (named(s, "flash") || named(s, "flash_direct") || named(s, "flash_qs"));
});

TEST_P(FlashPlans, FlashFirstAndLastComputation) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      const Landmarks m = landmarks(p);
      if (has_ag()) expect_starts_free(p, closure, m.first_ag);
      if (has_rs() && !has_ag()) expect_starts_free(p, closure, m.first_rs);
      ASSERT_GE(m.last_gemm, 0);
      if (has_rs()) expect_ends_free(p, closure, m);
      if (!is_("flash_direct") || !has_rs() || has_ag()) continue;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::gemm) {
          EXPECT_FALSE(waits_for_transfer(p, closure, t.id)) << describe(p, t.id);
        }
      }
    }
  });
}

// 7. decompose's AG exchange k waits for step k-1's GEMM (the lock-step); Flash's AG transfers
// run free of every GEMM.
class AgOverlapped : public PlanInvariants {};
INSTANTIATE_PLAN_SUITE(AgOverlapped, [](Workload w, const Strategy& s) {
  return (w->patterns & kAllGatherGemm) && (named(s, "decompose") || named(s, "flash") ||
                                            named(s, "flash_direct") || named(s, "flash_qs"));
});

TEST_P(AgOverlapped, AgLockStepOrFreeRunning) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      const int x = p.buffer_id("x");
      std::vector<int> ag_gemms, ag_exchanges;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::gemm && t.a.buffer == x) ag_gemms.push_back(t.id);
        if (t.kind == TaskKind::exchange && in_ag(p, t)) ag_exchanges.push_back(t.id);
      }
      if (is_("decompose")) {
        ASSERT_EQ(ag_gemms.size(), static_cast<size_t>(world_));
        ASSERT_EQ(ag_exchanges.size(), static_cast<size_t>(world_ - 1));
        for (size_t k = 1; k < ag_exchanges.size(); ++k) {
          EXPECT_TRUE(
              closure[static_cast<size_t>(ag_exchanges[k])][static_cast<size_t>(ag_gemms[k - 1])])
              << describe(p, ag_exchanges[k]) << " does not wait for "
              << describe(p, ag_gemms[k - 1]);
        }
      } else {
        for (int e : ag_exchanges) {
          for (int g : ag_gemms) {
            EXPECT_FALSE(closure[static_cast<size_t>(e)][static_cast<size_t>(g)])
                << describe(p, e) << " waits for " << describe(p, g);
          }
        }
      }
    }
  });
}

// attn: every (row, head) of O is computed exactly once, from the scores of that row's own
// sequence (all its keys and values) after a softmax over them.
// The workloads with attention, where the strategy computes it (not comm_only).
// What the walk over a plan's attention tasks has seen of the last scores GEMM.
struct LastScores {
  bool softmax_since = false;
  int64_t rows = -1, query_row = -1, query_rows = -1, key_row = -1, key_rows = -1;
};

class AttentionComputed : public PlanInvariants {
 protected:
  // Q rows of one sequence against keys of that sequence, head by head.
  void expect_scores(const Plan& p, const Task& t, int y, int64_t width, LastScores& last) const {
    const int64_t s = geometry_.seq, dh = geometry_.head_dim;
    EXPECT_TRUE(t.transpose_b) << describe(p, t.id);
    EXPECT_EQ(t.a.buffer, y);
    EXPECT_EQ(t.b.buffer, y);
    EXPECT_EQ(t.a.row / s, (t.a.row + t.a.rows - 1) / s) << describe(p, t.id);
    // A streamed attention takes the sequence's keys a block at a time (its own test,
    // test_plans_ulysses.cpp, checks every key is taken once); the others all at once.
    EXPECT_EQ(t.b.row / s, t.a.row / s) << describe(p, t.id);
    EXPECT_LE(t.b.row + t.b.rows, (t.a.row / s + 1) * s) << describe(p, t.id);
    if (!p.strategy.strategy->streams_attention) {
      EXPECT_EQ(t.b.rows, s) << describe(p, t.id);
    }
    EXPECT_EQ(t.k, dh) << describe(p, t.id);
    EXPECT_EQ(t.b.col, width) << "keys follow the queries " << describe(p, t.id);
    // Head i: its Q and K columns, its own block of scores rows.
    EXPECT_EQ(t.a_step.rows, 0);
    EXPECT_EQ(t.a_step.cols, dh);
    EXPECT_EQ(t.b_step.rows, 0);
    EXPECT_EQ(t.b_step.cols, dh);
    EXPECT_EQ(t.c.row, 0);
    EXPECT_EQ(t.c_step.rows, t.a.rows);
    EXPECT_EQ(t.c_step.cols, 0);
    last = {false, t.a.rows * t.batch, t.a.row, t.a.rows, t.b.row, t.b.rows};
  }

  void expect_softmax(const Plan& p, const Task& t, int scores, LastScores& last) const {
    const bool streamed = p.strategy.strategy->streams_attention;
    EXPECT_EQ(t.kind == TaskKind::online_softmax, streamed) << describe(p, t.id);
    EXPECT_EQ(t.c.buffer, scores);
    EXPECT_EQ(t.c.rows, last.rows) << describe(p, t.id);
    EXPECT_EQ(t.c.row, 0);
    EXPECT_EQ(t.n, last.key_rows) << "a softmax over every key just scored " << describe(p, t.id);
    EXPECT_DOUBLE_EQ(t.scale, 1.0 / std::sqrt(static_cast<double>(geometry_.head_dim)));
    last.softmax_since = true;
  }

  // Head i's probabilities times its values, into its output columns of the queries just
  // scored; each query's first block of keys writes O, later ones add to it (not counted).
  void expect_output(const Plan& p, const Task& t, int scores, int64_t width,
                     const LastScores& last, std::vector<int>& hits) const {
    const int64_t dh = geometry_.head_dim;
    EXPECT_TRUE(last.softmax_since) << describe(p, t.id) << " reads unnormalised scores";
    EXPECT_EQ(t.a.buffer, scores);
    EXPECT_EQ(t.b.col, 2 * width) << "values follow the keys " << describe(p, t.id);
    EXPECT_EQ(t.b.row, last.key_row) << describe(p, t.id);
    EXPECT_EQ(t.b.rows, last.key_rows) << describe(p, t.id);
    EXPECT_EQ(t.c.row, last.query_row) << describe(p, t.id);
    EXPECT_EQ(t.c.rows, last.query_rows) << describe(p, t.id);
    EXPECT_EQ(t.a.row, 0);
    EXPECT_EQ(t.a_step.rows, last.query_rows);
    EXPECT_EQ(t.a_step.cols, 0);
    EXPECT_EQ(t.b_step.cols, dh);
    EXPECT_EQ(t.c_step.cols, dh);
    if (t.accumulate) return;
    for (int i = 0; i < t.batch; ++i) {
      const int64_t col = t.c.col + i * t.c_step.cols;
      for (int64_t r = t.c.row; r < t.c.row + t.c.rows; ++r) {
        for (int64_t c = col; c < col + t.n; ++c) ++hits[static_cast<size_t>(r * width + c)];
      }
    }
  }
};
INSTANTIATE_PLAN_SUITE(AttentionComputed, [](Workload w, const Strategy& s) {
  return w->has_heads && !named(s, "comm_only");
});

TEST_P(AttentionComputed, AttentionCoversEveryHeadOnce) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      const int o = p.buffer_id("o");
      // Q, K and V of this rank's heads: the all-gather GEMM's output, or ulysses' all-to-all's.
      const int y = p.buffer_id(layout_.all_to_all ? "qkv" : "y");
      const int scores = p.buffer_id("scores");
      ASSERT_GE(o, 0);
      ASSERT_GE(scores, 0);
      const int64_t width = p.buffers[static_cast<size_t>(o)].cols;
      std::vector<int> hits(static_cast<size_t>(tokens_ * width), 0);
      LastScores last;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::gemm && t.c.buffer == scores) {
          expect_scores(p, t, y, width, last);
        } else if (t.kind == TaskKind::softmax || t.kind == TaskKind::online_softmax) {
          expect_softmax(p, t, scores, last);
        } else if (t.kind == TaskKind::gemm && t.c.buffer == o) {
          expect_output(p, t, scores, width, last, hits);
        }
      }
      for (int64_t e = 0; e < tokens_ * width; ++e) {
        ASSERT_EQ(hits[static_cast<size_t>(e)], 1)
            << "O[" << e / width << ", " << e % width << "] on rank " << p.rank;
      }
    }
  });
}

// flash_qs (Algorithm 4): each query slice's attention runs while the previous slice's sums
// travel, so neither waits for the other; the row-parallel strategies finish all attention
// before their first reduce-scatter transfer.
// attn's overlapping strategies (Ulysses' first all-to-all precedes the attention:
// test_plans_ulysses.cpp).
class AttentionOverlapped : public PlanInvariants {};
INSTANTIATE_PLAN_SUITE(AttentionOverlapped, [](Workload w, const Strategy& s) {
  return w->has_heads && !(w->patterns & kGemmAllToAll) && !s.is_reference();
});

TEST_P(AttentionOverlapped, QuerySplitHidesTransfersBehindAttention) {
  for_each_world([&] {
    if (world_ == 1) return;  // no transfers
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      int last_attention = -1, first_rs_transfer = -1;
      for (const Task& t : p.tasks) {
        if (is_attention(p, t)) last_attention = t.id;
        if (t.is_transfer() && !in_ag(p, t) && first_rs_transfer < 0) first_rs_transfer = t.id;
      }
      ASSERT_GE(first_rs_transfer, 0);
      ASSERT_GE(last_attention, 0) << "rank " << p.rank << " has no attention";
      if (!is_("flash_qs")) {
        EXPECT_LT(last_attention, first_rs_transfer) << "rank " << p.rank;
        continue;
      }
      int transfers = 0;
      for (const Task& e : p.tasks) {
        if (!e.is_transfer() || in_ag(p, e)) continue;
        ++transfers;
        // The attention emitted after this transfer and before the next one is its cover.
        int cover = 0;
        for (size_t j = static_cast<size_t>(e.id) + 1; j < p.tasks.size(); ++j) {
          const Task& t = p.tasks[j];
          if (t.is_transfer()) break;
          if (!is_attention(p, t)) continue;
          ++cover;
          EXPECT_FALSE(closure[j][static_cast<size_t>(e.id)])
              << describe(p, t.id) << " waits for " << describe(p, e.id);
          EXPECT_FALSE(closure[static_cast<size_t>(e.id)][j])
              << describe(p, e.id) << " waits for " << describe(p, t.id);
        }
        EXPECT_GT(cover, 0) << describe(p, e.id) << " has no attention to hide behind";
      }
      EXPECT_EQ(transfers, param_ * (world_ - 1)) << "rank " << p.rank;
    }
  });
}

// Reference modes declare their own checks; compute_only reads no transferred data.
TEST_P(PlanInvariants, ReferenceModes) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      if (is_("compute_only")) {
        for (const Task& t : p.tasks) EXPECT_FALSE(t.is_transfer()) << describe(p, t.id);
      }
      EXPECT_FALSE(p.checks.empty()) << "rank " << p.rank << " checks nothing";
      for (const OutputCheck& c : p.checks) {
        EXPECT_GE(c.buffer, 0);
        EXPECT_LT(c.buffer, static_cast<int>(p.buffers.size()));
      }
    }
  });
}

INSTANTIATE_PLAN_SUITE(PlanInvariants, [](Workload, const Strategy&) { return true; });

// The suite above instantiates a strategy only at the workloads it applies to: one that applies
// to none would go untested.
TEST(PlanCoverage, EveryStrategyIsTested) {
  for (const Strategy* s : all_strategies()) {
    EXPECT_FALSE(applicable_workloads(*s).empty()) << s->name << " runs no workload";
  }
}

TEST(ValidateCase, TokensMustDivideByWorld) {
  CaseSpec c = case_for(find_workload("mlp"), "baseline", 3);
  c.shape.batch = 1;
  c.shape.seq = 7;
  c.shape.ffn = 12;
  const std::string msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("batch*seq"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("world size 3"), std::string::npos) << msg;
  EXPECT_THROW(make_plan(c, 0), InputError);
}

TEST(ValidateCase, QuerySplitIsForAttentionOnly) {
  CaseSpec c = case_for(find_workload("mlp"), "flash_qs", 2);
  const std::string msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("flash_qs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("attn"), std::string::npos) << msg;
  c.workload = find_workload("attn");
  EXPECT_NO_THROW(validate_case(c));
}

TEST(ValidateCase, HeadsMustSplitAcrossRanksAndDivideHidden) {
  CaseSpec c = case_for(find_workload("attn"), "flash", 4);
  c.shape.heads = 6;  // hidden 32: 6 does not divide it
  std::string msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("heads: 6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hidden 32"), std::string::npos) << msg;
  c.shape.heads = 2;  // divides 32, but 4 ranks cannot share 2 heads
  msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("world size 4"), std::string::npos) << msg;
  c.shape.heads = 0;  // default: hidden / 128, and 32 is no multiple of 128
  msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("heads: not given"), std::string::npos) << msg;
  c.shape.hidden = 512;  // 4 default heads of 128
  c.shape.ffn = 512;
  EXPECT_NO_THROW(validate_case(c));
  c.workload = find_workload("mlp");  // heads mean nothing to the MLP
  c.shape.heads = 3;
  EXPECT_NO_THROW(validate_case(c));
}

TEST(ValidateCase, FfnMustDivideByWorld) {
  CaseSpec c = case_for(find_workload("gemm_rs"), "flash", 4);
  c.shape.ffn = 10;
  const std::string msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("ffn"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4"), std::string::npos) << msg;
}

TEST(ValidateCase, ParameterMayNotExceedTheRowsPerRank) {
  // Pieces need not be equal (they differ by at most a row), but there cannot be more than rows.
  CaseSpec c = case_for(find_workload("ag_gemm"), "slicing:9", 2);  // 8 rows per rank
  const std::string msg = input_error([&] { validate_case(c); });
  EXPECT_NE(msg.find("slicing:9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1..8"), std::string::npos) << msg;
  c = case_for(find_workload("ag_gemm"), "flash:9", 2);
  EXPECT_THROW(validate_case(c), InputError);
  for (const char* ok : {"slicing:3", "flash:3", "slicing:8", "flash_direct:5"}) {
    c = case_for(find_workload("ag_gemm"), ok, 2);
    EXPECT_NO_THROW(validate_case(c)) << ok;
  }
}

TEST(ValidateCase, NonPositiveDimensions) {
  CaseSpec c = case_for(find_workload("mlp"), "baseline", 2);
  c.shape.hidden = 0;
  EXPECT_NE(input_error([&] { validate_case(c); }).find("hidden"), std::string::npos);
  c = case_for(find_workload("mlp"), "baseline", 0);
  EXPECT_THROW(validate_case(c), InputError);
}

TEST(ParseStrategy, Valid) {
  StrategySpec s = parse_strategy("flash:2");
  ASSERT_NE(s.strategy, nullptr);
  EXPECT_STREQ(s.strategy->name, "flash");
  EXPECT_EQ(s.param, 2);
  EXPECT_EQ(s.text, "flash:2");
  s = parse_strategy("slicing");
  EXPECT_EQ(s.param, s.strategy->default_param);
  EXPECT_EQ(parse_strategy("flash").param, 1);
}

TEST(ParseStrategy, Invalid) {
  const std::string unknown = input_error([] { parse_strategy("nope"); });
  EXPECT_NE(unknown.find("nope"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("flash_direct"), std::string::npos) << unknown;
  for (const char* bad : {"baseline:2", "slicing:0", "flash:x", "flash:", "slicing:-1", ""}) {
    const std::string msg = input_error([&] { parse_strategy(bad); });
    EXPECT_NE(msg.find("strategies"), std::string::npos) << bad << ": " << msg;
  }
}

// The checkers above must catch what they look for.

}  // namespace
}  // namespace fob::plan_test
