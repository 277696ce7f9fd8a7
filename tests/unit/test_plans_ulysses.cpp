// Ulysses' plan invariants for every strategy at world sizes 1..8 (test_plans.cpp checks what
// all workloads share: dependencies, matched transfers, a schedule that completes, attention):
// every row and head of the exchanged QKV and O comes from its own sequence and owner, every
// output row sums every head group exactly once, the right bytes move, and the orders that
// separate Flash-All-to-All from the lock-stepped and the blocking forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "../common/plan_closure.h"
#include "../common/strategy_specs.h"
#include "fob/layer.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

// 4 tokens of each of 2 sequences per rank: slicing:3 and flash:3 pieces straddle sequences.
CaseSpec ulysses_case(const std::string& strategy, int world) {
  CaseSpec c;
  c.workload = find_workload("ulysses");
  c.shape = {2, 4 * world, 4 * world, 4 * world};
  c.shape.heads = 2 * world;
  c.world = world;
  c.strategy = parse_strategy(strategy);
  return c;
}

std::string describe(const Plan& plan, int task) {
  return "rank " + std::to_string(plan.rank) + " task " + std::to_string(task) + " '" +
         plan.tasks.at(static_cast<size_t>(task)).label + "'";
}

// What RowsTravelToTheirOwners gathers over every rank's plan: per sender, receiver and tag,
// the rows sent and received (as local rows) in order, and the rows received into qkv and
// o_recv.
struct RowTraffic {
  std::map<std::tuple<int, int, int>, std::vector<int64_t>> sent, received;
  int64_t moved[2] = {0, 0};
};

class Ulysses : public ::testing::TestWithParam<std::string> {
 protected:
  void for_each_world(const std::function<void()>& body) {
    for (int world = 1; world <= 8; ++world) {
      SCOPED_TRACE("world " + std::to_string(world));
      n_ = world;
      spec_ = ulysses_case(GetParam(), world);
      plans_.clear();
      for (int r = 0; r < world; ++r) plans_.push_back(make_plan(spec_, r));
      tokens_ = spec_.shape.seq / n_;
      local_ = spec_.shape.batch * tokens_;
      body();
    }
  }
  bool is(const char* name) const { return std::string(spec_.strategy.strategy->name) == name; }
  bool reference() const { return spec_.strategy.strategy->is_reference(); }
  int64_t seq_row(int j, int64_t local) const {
    return local / tokens_ * spec_.shape.seq + j * tokens_ + local % tokens_;
  }
  // The (rank, local row) a sequence-major row belongs to.
  std::pair<int, int64_t> owner(int64_t row) const {
    const int64_t b = row / spec_.shape.seq, t = row % spec_.shape.seq;
    return {static_cast<int>(t / tokens_), b * tokens_ + t % tokens_};
  }
  int buffer(const Plan& p, const char* name) const { return p.buffer_id(name); }

  // #1 goes peer-major to sequence-major, #2 back; a chunk per sequence.
  void all_to_all(const Plan& p, const Task& t, RowTraffic& traffic) const {
    ASSERT_EQ(t.op, CollectiveOp::all_to_all) << describe(p, t.id);
    const bool first = t.a.buffer == buffer(p, "qkv_send");
    EXPECT_EQ(t.c.buffer, buffer(p, first ? "qkv" : "o_recv")) << describe(p, t.id);
    EXPECT_EQ(t.a.buffer, buffer(p, first ? "qkv_send" : "o")) << describe(p, t.id);
    EXPECT_EQ(t.src_stride_rows, first ? local_ : tokens_);
    EXPECT_EQ(t.dst_stride_rows, first ? tokens_ : local_);
    EXPECT_EQ(t.a_step.rows, first ? tokens_ : spec_.shape.seq);
    EXPECT_EQ(t.c_step.rows, first ? spec_.shape.seq : tokens_);
    const int64_t local = first ? t.a.row : t.c.row;
    EXPECT_EQ(first ? t.c.row : t.a.row, seq_row(0, local)) << describe(p, t.id);
    EXPECT_EQ(local / tokens_, (local + t.a.rows - 1) / tokens_) << "chunks in a sequence";
    EXPECT_LE(local / tokens_ + t.batch, spec_.shape.batch) << describe(p, t.id);
    traffic.moved[first ? 0 : 1] += t.c.rows * t.batch * n_;
  }

  // A row of rank q's block of qkv_send, or of o rows holding rank q's tokens, goes to q.
  void sent(const Plan& p, const Task& t, RowTraffic& traffic) const {
    auto& rows = traffic.sent[{p.rank, t.send_peer, t.tag}];
    if (t.a.buffer == buffer(p, "qkv_send")) {
      EXPECT_EQ(t.a.row / local_, t.send_peer) << describe(p, t.id);
      rows.push_back(t.a.row % local_);
      return;
    }
    ASSERT_EQ(t.a.buffer, buffer(p, "o")) << describe(p, t.id);
    EXPECT_EQ(owner(t.a.row).first, t.send_peer) << describe(p, t.id);
    rows.push_back(owner(t.a.row).second);
  }

  // Into the rows of the sender's tokens (qkv) or its head block (o_recv), same local row.
  void received(const Plan& p, const Task& t, RowTraffic& traffic) const {
    auto& rows = traffic.received[{t.recv_peer, p.rank, t.tag}];
    if (t.c.buffer == buffer(p, "qkv")) {
      EXPECT_EQ(owner(t.c.row).first, t.recv_peer) << describe(p, t.id);
      rows.push_back(owner(t.c.row).second);
      traffic.moved[0] += t.c.rows;
      return;
    }
    ASSERT_EQ(t.c.buffer, buffer(p, "o_recv")) << describe(p, t.id);
    EXPECT_EQ(t.c.row / local_, t.recv_peer) << describe(p, t.id);
    rows.push_back(t.c.row % local_);
    traffic.moved[1] += t.c.rows;
  }

  // Every rank receives each peer's L rows once per all-to-all (collectives count their own
  // block too).
  void expect_rows_moved(const RowTraffic& traffic) const {
    const StrategyRole role = spec_.strategy.strategy->role;
    const bool transfers = role != StrategyRole::compute_reference && n_ > 1;
    const int64_t per_half = static_cast<int64_t>(n_) * (n_ - 1) * local_;
    const bool collectives = std::any_of(plans_.begin(), plans_.end(), [](const Plan& p) {
      return std::any_of(p.tasks.begin(), p.tasks.end(),
                         [](const Task& t) { return t.kind == TaskKind::collective; });
    });
    const int64_t want = collectives ? per_half + n_ * local_ : per_half;
    EXPECT_EQ(traffic.moved[0], transfers ? want : 0);
    const bool comm_only = role == StrategyRole::comm_reference && n_ > 1;
    EXPECT_EQ(traffic.moved[1], transfers && !reference() ? want : (comm_only ? want : 0));
  }

  int n_ = 1;
  CaseSpec spec_;
  std::vector<Plan> plans_;
  int64_t tokens_ = 0, local_ = 0;
};

// The properties that hold for some strategies alone have fixtures of their own, instantiated
// (below) at those strategies alone.
class UlyssesComputed : public Ulysses {};    // every strategy with GEMMs (not comm_only)
class UlyssesOverlapped : public Ulysses {};  // no reference mode
class UlyssesStreamed : public Ulysses {};    // the attention streamed block by block

// Every transfer and collective moves each row from the rank and token it belongs to. Pairs
// are matched as the backends match them: by sender, receiver and tag, in plan order.
TEST_P(Ulysses, RowsTravelToTheirOwners) {
  for_each_world([&] {
    RowTraffic traffic;
    for (const Plan& p : plans_) {
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::collective) {
          all_to_all(p, t, traffic);
          continue;
        }
        if (t.sends()) sent(p, t, traffic);
        if (t.receives()) received(p, t, traffic);
      }
    }
    EXPECT_EQ(traffic.sent, traffic.received);
    expect_rows_moved(traffic);
  });
}

// Each row of Z is the sum over the N head groups of O(row's tokens, heads j) * WO_j: every
// (row, j) exactly once, the first write not accumulating, the rest accumulating.
TEST_P(UlyssesComputed, OutputSumsEveryHeadGroupOnce) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      const int z = buffer(p, "z"), o = buffer(p, "o"), o_recv = buffer(p, "o_recv");
      const int64_t dn = spec_.shape.hidden / n_;
      std::vector<int> hits(static_cast<size_t>(local_ * n_), 0);
      std::vector<bool> written(static_cast<size_t>(local_), false);
      for (const Task& t : p.tasks) {
        if (t.c.buffer != z) continue;
        ASSERT_EQ(t.kind, TaskKind::gemm) << describe(p, t.id);
        EXPECT_EQ(t.k, dn) << describe(p, t.id);
        const int j = static_cast<int>(t.b.row / dn);
        EXPECT_EQ(t.b.row, j * dn);
        for (int i = 0; i < t.batch; ++i) {
          for (int64_t e = 0; e < t.c.rows; ++e) {
            const int64_t row = t.c.row + i * t.c_step.rows + e;
            const int64_t a_row = t.a.row + i * t.a_step.rows + e;
            if (t.a.buffer == o) {  // own heads, read where the attention wrote them
              EXPECT_EQ(j, p.rank) << describe(p, t.id);
              EXPECT_EQ(a_row, seq_row(p.rank, row)) << describe(p, t.id);
            } else {
              ASSERT_EQ(t.a.buffer, o_recv) << describe(p, t.id);
              EXPECT_EQ(a_row, j * local_ + row) << describe(p, t.id);
            }
            EXPECT_EQ(t.accumulate, written[static_cast<size_t>(row)]) << describe(p, t.id);
            written[static_cast<size_t>(row)] = true;
            ++hits[static_cast<size_t>(row * n_ + j)];
          }
        }
      }
      for (size_t e = 0; e < hits.size(); ++e) {
        ASSERT_EQ(hits[e], 1) << "Z row " << e / n_ << " head group " << e % n_ << " rank "
                              << p.rank;
      }
    }
  });
}

// The projections' GEMM work: QKV 2*L*D*3D, attention 4*M*S*D/N, Z 2*L*D*D, on every rank.
TEST_P(UlyssesComputed, GemmFlops) {
  for_each_world([&] {
    const double l = static_cast<double>(local_), d = static_cast<double>(spec_.shape.hidden);
    const double m = static_cast<double>(spec_.shape.tokens()), s = spec_.shape.seq;
    for (const Plan& p : plans_) {
      double qkv = 0, attention = 0, out = 0;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::gemm) continue;
        const std::string& c = p.buffers[static_cast<size_t>(t.c.buffer)].name;
        (c == "z" ? out : c == "qkv" || c == "qkv_send" ? qkv : attention) += t.flops;
      }
      EXPECT_DOUBLE_EQ(qkv, 2 * l * d * 3 * d) << "rank " << p.rank;
      EXPECT_DOUBLE_EQ(attention, 4 * m * s * d / n_) << "rank " << p.rank;
      EXPECT_DOUBLE_EQ(out, 2 * l * d * d) << "rank " << p.rank;
    }
  });
}

// Flash-All-to-All's rank-adaptive order: in #1 the first projection waits for nothing and the
// last (this rank's own heads) for no transfer, and no projection waits for any transfer; in #2
// the first output GEMM waits for no transfer of O. decompose instead lock-steps: its second
// and later #1 projections wait for the previous step's transfer. baseline's projection of the
// own heads waits behind the blocking all-to-all.
TEST_P(UlyssesOverlapped, FirstAndLastComputation) {
  for_each_world([&] {
    if (n_ == 1) return;
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      const int qkv_send = buffer(p, "qkv_send"), qkv = buffer(p, "qkv"), z = buffer(p, "z");
      const int o_recv = buffer(p, "o_recv");
      std::vector<int> projections, outputs;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::gemm) continue;
        if (t.c.buffer == qkv_send || t.c.buffer == qkv) projections.push_back(t.id);
        if (t.c.buffer == z) outputs.push_back(t.id);
      }
      auto waits_for_o = [&](int task) {
        for (const Task& t : p.tasks) {
          if (t.is_transfer() && t.c.buffer == o_recv &&
              closure[static_cast<size_t>(task)][static_cast<size_t>(t.id)]) {
            return true;
          }
        }
        return false;
      };
      const int first = projections.front(), last = projections.back();
      EXPECT_TRUE(p.tasks[static_cast<size_t>(first)].deps.empty()) << describe(p, first);
      if (is("flash") || is("flash_direct") || is("flash_qs") || is("flash_stream")) {
        for (int g : projections) {
          EXPECT_FALSE(waits_for_transfer(p, closure, g)) << describe(p, g);
        }
        EXPECT_EQ(p.tasks[static_cast<size_t>(last)].c.buffer, qkv) << "own heads last";
        EXPECT_FALSE(waits_for_o(outputs.front())) << describe(p, outputs.front());
      } else if (is("decompose")) {
        if (n_ > 2) {
          EXPECT_TRUE(waits_for_transfer(p, closure, projections[2]))
              << describe(p, projections[2]);
        }
        EXPECT_FALSE(waits_for_o(outputs.front())) << describe(p, outputs.front());
      } else if (is("baseline")) {
        EXPECT_TRUE(waits_for_o(outputs.front())) << describe(p, outputs.front());
      }
    }
  });
}

// Query split: each piece of O is computed just before it is sent, so the attention emitted
// after a transfer of O neither waits for it nor holds it up; without query split the whole
// attention precedes the first transfer of O.
TEST_P(UlyssesOverlapped, QuerySplitHidesTransfersBehindAttention) {
  for_each_world([&] {
    if (n_ == 1) return;
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      const int o = buffer(p, "o"), scores = buffer(p, "scores");
      auto attention = [&](const Task& t) {
        return t.kind == TaskKind::softmax ||
               (t.kind == TaskKind::gemm && (t.c.buffer == scores || t.c.buffer == o));
      };
      int last_attention = -1, first_o_transfer = -1;
      for (const Task& t : p.tasks) {
        if (attention(t)) last_attention = t.id;
        if (t.is_transfer() && t.a.buffer == o && first_o_transfer < 0) first_o_transfer = t.id;
      }
      ASSERT_GE(first_o_transfer, 0);
      if (!is("flash_qs")) {
        EXPECT_LT(last_attention, first_o_transfer) << "rank " << p.rank;
        continue;
      }
      for (const Task& e : p.tasks) {
        if (!e.is_transfer() || e.a.buffer != o) continue;
        int cover = 0;
        for (size_t j = static_cast<size_t>(e.id) + 1; j < p.tasks.size(); ++j) {
          const Task& t = p.tasks[j];
          if (t.is_transfer()) break;
          if (!attention(t)) continue;
          ++cover;
          EXPECT_FALSE(closure[j][static_cast<size_t>(e.id)]) << describe(p, t.id);
          EXPECT_FALSE(closure[static_cast<size_t>(e.id)][j]) << describe(p, e.id);
        }
        EXPECT_GT(cover, 0) << describe(p, e.id) << " has no attention to hide behind";
      }
    }
  });
}

// The streamed attention: every query row takes every key row of its sequence exactly once (the
// first time as its first block), is normalised once, after its last; the first block (the own
// tokens' keys) waits for no transfer, so it runs while #1 is in flight; and #2 sends first the
// outputs of rank r-1's tokens, the first to be finished.
TEST_P(UlyssesStreamed, StreamedAttentionFoldsEveryKeyOnce) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      const int64_t rows = spec_.shape.tokens(), s = spec_.shape.seq;
      std::vector<int> folds(static_cast<size_t>(rows * s), 0), firsts(static_cast<size_t>(rows));
      std::vector<int> finished(static_cast<size_t>(rows), -1), last_fold(finished);
      int first_block = -1;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::online_softmax) {
          const Task& scores = p.tasks[static_cast<size_t>(t.id - 1)];  // its Q K^T
          ASSERT_EQ(scores.kind, TaskKind::gemm) << describe(p, t.id);
          if (first_block < 0) first_block = t.id;
          for (int64_t q = t.a.row; q < t.a.row + t.a.rows; ++q) {
            EXPECT_EQ(finished[static_cast<size_t>(q)], -1) << describe(p, t.id);
            firsts[static_cast<size_t>(q)] += !t.accumulate;
            EXPECT_EQ(t.accumulate, last_fold[static_cast<size_t>(q)] >= 0) << describe(p, t.id);
            last_fold[static_cast<size_t>(q)] = t.id;
            for (int64_t k = scores.b.row; k < scores.b.row + scores.b.rows; ++k) {
              ASSERT_EQ(q / s, k / s) << describe(p, t.id) << ": keys of another sequence";
              ++folds[static_cast<size_t>(q * s + k % s)];
            }
          }
        }
        if (t.kind == TaskKind::softmax_finish) {
          for (int64_t q = t.c.row; q < t.c.row + t.c.rows; ++q) {
            EXPECT_EQ(finished[static_cast<size_t>(q)], -1) << describe(p, t.id);
            finished[static_cast<size_t>(q)] = t.id;
          }
        }
      }
      EXPECT_EQ(std::count(folds.begin(), folds.end(), 1), rows * s) << "rank " << p.rank;
      EXPECT_EQ(std::count(firsts.begin(), firsts.end(), 1), rows) << "rank " << p.rank;
      for (int64_t q = 0; q < rows; ++q) {
        EXPECT_GT(finished[static_cast<size_t>(q)], last_fold[static_cast<size_t>(q)]) << q;
      }
      const auto closure = waits_for(p);
      ASSERT_GE(first_block, 0);
      EXPECT_FALSE(waits_for_transfer(p, closure, first_block)) << describe(p, first_block);
      const int o = buffer(p, "o");
      for (const Task& t : p.tasks) {
        if (!t.is_transfer() || t.a.buffer != o) continue;
        if (n_ > 1) {
          EXPECT_EQ(owner(t.a.row).first, (p.rank + n_ - 1) % n_) << describe(p, t.id);
        }
        break;
      }
    }
  });
}

// The specs of strategy_specs.h that run ulysses and of which `applies` holds.
std::vector<std::string> ulysses_specs(bool (*applies)(const Strategy&)) {
  std::vector<std::string> out;
  for (const std::string& spec : strategy_specs_for(find_workload("ulysses"), kPlanParams)) {
    if (applies(*parse_strategy(spec).strategy)) out.push_back(spec);
  }
  return out;
}

std::string spec_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), ':', '_');
  return name;
}

bool any(const Strategy&) {
  return true;
}
bool computes(const Strategy& s) {
  return std::string(s.name) != "comm_only";
}
bool overlaps(const Strategy& s) {
  return !s.is_reference();
}
bool streams(const Strategy& s) {
  return s.streams_attention;
}

INSTANTIATE_TEST_SUITE_P(Strategies, Ulysses, ::testing::ValuesIn(ulysses_specs(any)), spec_name);
INSTANTIATE_TEST_SUITE_P(Strategies, UlyssesComputed, ::testing::ValuesIn(ulysses_specs(computes)),
                         spec_name);
INSTANTIATE_TEST_SUITE_P(Strategies, UlyssesOverlapped,
                         ::testing::ValuesIn(ulysses_specs(overlaps)), spec_name);
INSTANTIATE_TEST_SUITE_P(Strategies, UlyssesStreamed, ::testing::ValuesIn(ulysses_specs(streams)),
                         spec_name);

// At long context the attention takes its queries a tile at a time: Llama-3-8B's heads at 128K
// tokens on 8 ranks would need 2^35 scores per sequence; the tiles keep them within
// kScoresElements while every query row of every local head is still computed exactly once.
TEST(UlyssesLongContext, AttentionTilesItsQueries) {
  CaseSpec c = ulysses_case("flash_qs", 8);
  c.shape = {1, 131072, 4096, 4096};
  c.shape.heads = 32;
  c.dtype = DType::bf16;
  const Plan p = make_plan(c, 3);
  const int scores = p.buffer_id("scores"), o = p.buffer_id("o");
  const BufferSpec& buf = p.buffers[static_cast<size_t>(scores)];
  EXPECT_LE(buf.rows * buf.cols, kScoresElements);
  EXPECT_EQ(buf.cols, c.shape.seq);
  std::vector<int> hits(static_cast<size_t>(c.shape.seq), 0);
  int tiles = 0;
  for (const Task& t : p.tasks) {
    if (t.kind != TaskKind::gemm || t.c.buffer != o) continue;
    ++tiles;
    EXPECT_EQ(t.batch, 4) << "every local head at once";
    for (int64_t r = t.c.row; r < t.c.row + t.c.rows; ++r) ++hits[static_cast<size_t>(r)];
  }
  EXPECT_GT(tiles, 1);
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), c.shape.seq);
}

std::string input_error(const CaseSpec& spec) {
  try {
    validate_case(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(UlyssesValidate, SequenceAndHeadsMustSplitAcrossRanks) {
  CaseSpec c = ulysses_case("flash", 4);
  c.shape.seq = 18;  // batch*seq = 36 divides by 4, seq does not
  std::string msg = input_error(c);
  EXPECT_NE(msg.find("seq: 18"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ulysses"), std::string::npos) << msg;
  c = ulysses_case("flash", 4);
  c.shape.heads = 2;
  msg = input_error(c);
  EXPECT_NE(msg.find("heads: 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("multiple of 4"), std::string::npos) << msg;
  EXPECT_EQ(input_error(ulysses_case("flash_qs:2", 4)), "");
}

// A strategy without all-to-all halves is refused by name, with the workloads it does run.
TEST(UlyssesValidate, StrategyWithoutAllToAllHalves) {
  static const Strategy toy = [] {
    Strategy s = *parse_strategy("baseline").strategy;
    s.name = "ulysses_test_toy";
    s.gemm_all_to_all = nullptr;
    s.all_to_all_gemm = nullptr;
    return s;
  }();
  EXPECT_FALSE(strategy_applies(toy, find_workload("ulysses")));
  EXPECT_TRUE(strategy_applies(toy, find_workload("attn")));
  EXPECT_EQ(applicable_workloads(toy).find("ulysses"), std::string::npos);
}

}  // namespace
}  // namespace fob
