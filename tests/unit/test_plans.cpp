// Structural invariants of every strategy's plans (docs/DESIGN.md section 1), for every workload
// and world size 1..8: dependencies, a deadlock-free cross-rank schedule, matched transfers,
// outputs computed exactly once, GEMM work, transfer counts, and the ordering properties that
// separate Flash-Overlap from the lock-stepped decomposition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../common/input_error.h"
#include "../common/plan_closure.h"
#include "../common/workload_cases.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "fob/types.h"
#include "fob/workload.h"

namespace fob {
namespace {

// slicing:3, flash:3 and flash_direct:3 cut 8 rows into uneven pieces (3, 3, 2).
const char* const kSpecs[] = {
    "baseline", "slicing:1",  "slicing:2",  "slicing:3",    "slicing:4",      "decompose",
    "flash",    "flash:2",    "flash:3",    "flash_direct", "flash_direct:2", "flash_direct:3",
    "flash_qs", "flash_qs:2", "flash_qs:3", "compute_only", "comm_only"};
constexpr int kMaxWorld = 8;
// Per-rank rows are 8 in every role: tokens (ag_gemm, gemm_rs, mlp), ffn (ag_gemm_w) and hidden
// (gemm_rs_grad) all grow with the world size.
constexpr int64_t kRowsPerRank = 8;

// Tokens M = 8N so one rank's block (8 rows) divides by every parameter above; ffn = 8N. The
// sequence (4N) is shorter than a block at N = 1 and cuts blocks apart at N = 3, so attention
// meets query slices spanning, filling and straddling sequences.
Shape shape_for(int world) {
  Shape s;
  s.batch = 2;
  s.seq = 4 * world;
  s.hidden = kRowsPerRank * world;
  s.ffn = 8 * world;
  s.heads = 2 * world;  // attn: two heads of 4 columns per rank
  return s;
}

CaseSpec case_for(Workload workload, const std::string& spec, int world) {
  CaseSpec c;
  c.workload = workload;
  c.shape = shape_for(world);
  c.dtype = DType::fp32;
  c.world = world;
  c.strategy = parse_strategy(spec);
  return c;
}

// Rows [begin, end) of one buffer.
struct Rows {
  int64_t begin;
  int64_t end;
};

// Each row of [0, total) is hit exactly once by `ranges`.
::testing::AssertionResult covers_exactly_once(const std::vector<Rows>& ranges, int64_t total) {
  std::vector<int> hits(static_cast<size_t>(total), 0);
  for (const Rows& r : ranges) {
    if (r.begin < 0 || r.end > total || r.begin > r.end) {
      return ::testing::AssertionFailure()
             << "range [" << r.begin << ", " << r.end << ") outside [0, " << total << ")";
    }
    for (int64_t i = r.begin; i < r.end; ++i) ++hits[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < total; ++i) {
    if (hits[static_cast<size_t>(i)] != 1) {
      return ::testing::AssertionFailure()
             << "row " << i << " hit " << hits[static_cast<size_t>(i)] << " times";
    }
  }
  return ::testing::AssertionSuccess();
}

bool is_p2p(const Task& t) {
  return t.kind == TaskKind::send || t.kind == TaskKind::recv || t.kind == TaskKind::exchange;
}
bool sends(const Task& t) {
  return (t.kind == TaskKind::send || t.kind == TaskKind::exchange) && t.send_peer >= 0;
}
bool receives(const Task& t) {
  return (t.kind == TaskKind::recv || t.kind == TaskKind::exchange) && t.recv_peer >= 0;
}

std::string describe(const Plan& plan, int task) {
  std::ostringstream out;
  out << "rank " << plan.rank << " task " << task << " '" << plan.tasks.at(task).label << "'";
  return out.str();
}

using Param = std::tuple<Workload, std::string>;

// A test whose property does not apply to this workload and strategy is reported skipped, with
// the reason, never counted as passed. The plans of one rank are built to ask.
#define SKIP_UNLESS(applies, why)          \
  do {                                     \
    build(1);                              \
    if (!(applies)) GTEST_SKIP() << (why); \
  } while (false)

// What the invariants below expect of a workload's plan, from its table entry: which halves it
// has and how they connect. The two layouts whose plans add a step to the halves are named.
struct Layout {
  bool has_ag = false, has_rs = false, all_to_all = false;
  bool h_is_y = false;      // the reduce-scatter GEMM consumes the all-gather GEMM's output
  bool attention = false;   // H is computed by attention
  bool all_reduce = false;  // gemm_ar: an all-gather of the reduced blocks follows
  bool backward = false;    // mlp_bwd: weight gradients and a second gather of X
  static Layout of(Workload w, const Geometry& g) {
    Layout l;
    l.has_ag = w->patterns & kAllGatherGemm;
    l.has_rs = w->patterns & kGemmReduceScatter;
    l.all_to_all = w->patterns & kGemmAllToAll;
    l.h_is_y = g.h_source == Geometry::HSource::product;
    l.attention = w->has_heads;
    l.all_reduce = std::string(w->name) == "gemm_ar";
    l.backward = std::string(w->name) == "mlp_bwd";
    return l;
  }
};

class PlanInvariants : public ::testing::TestWithParam<Param> {
 protected:
  // Builds every rank's plan for `world` ranks and runs `body` on them, once per world size.
  void for_each_world(const std::function<void()>& body) {
    for (int world = 1; world <= kMaxWorld; ++world) {
      SCOPED_TRACE("world " + std::to_string(world));
      build(world);
      body();
    }
  }

  void build(int world) {
    workload_ = std::get<0>(GetParam());
    spec_text_ = std::get<1>(GetParam());
    world_ = world;
    spec_ = case_for(workload_, spec_text_, world_);
    plans_.clear();
    for (int r = 0; r < world_; ++r) plans_.push_back(make_plan(spec_, r));
    geometry_ = geometry(workload_, spec_.shape);
    layout_ = Layout::of(workload_, geometry_);
    tokens_ = geometry_.m;
    block_ = tokens_ / world_;
    ffn_local_ = geometry_.f / world_;
    const std::string name = spec_.strategy.strategy->name;
    reference_ = spec_.strategy.strategy->is_reference();
    param_ = spec_.strategy.param;
    is_ = [name](const char* n) { return name == n; };
  }

  bool has_ag() const { return layout_.has_ag; }
  bool is_weight_gradient(const Plan& p, const Task& t) const {
    return layout_.backward &&
           (t.c.buffer == p.buffer_id("dw1") || t.c.buffer == p.buffer_id("dw2"));
  }
  bool has_rs() const { return layout_.has_rs; }
  // The RS half's input H: its own buffer, or the AG half's output for the MLP.
  int h_buffer(const Plan& p) const {
    return p.buffer_id(layout_.h_is_y ? "y" : layout_.attention ? "o" : "h");
  }
  // attn's scores, softmax and P V tasks.
  bool is_attention(const Plan& p, const Task& t) const {
    if (!layout_.attention) return false;
    if (t.kind == TaskKind::softmax) return true;
    return t.kind == TaskKind::gemm &&
           (t.c.buffer == p.buffer_id("scores") || t.c.buffer == p.buffer_id("o"));
  }
  // A task of the AG half: reads or writes X, or writes Y with a GEMM from X.
  bool in_ag(const Plan& p, const Task& t) const {
    if (!has_ag()) return false;
    const int x = p.buffer_id("x");
    return t.a.buffer == x || t.c.buffer == x;
  }

  Workload workload_ = find_workload("mlp");
  std::string spec_text_;
  int world_ = 1;
  CaseSpec spec_;
  std::vector<Plan> plans_;
  Geometry geometry_;
  Layout layout_;
  int64_t tokens_ = 0, block_ = 0, ffn_local_ = 0;
  bool reference_ = false;
  int param_ = 1;
  std::function<bool(const char*)> is_;
};

// 1a. Ids are 0..n-1 in order and every dependency points to an earlier task.
TEST_P(PlanInvariants, DependenciesPointBackwards) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      EXPECT_EQ(p.world, world_);
      // comm_only on one rank has nothing to communicate for the all-gather.
      if (!(is_("comm_only") && world_ == 1)) {
        ASSERT_FALSE(p.tasks.empty()) << "rank " << p.rank;
      }
      for (size_t i = 0; i < p.tasks.size(); ++i) {
        const Task& t = p.tasks[i];
        EXPECT_EQ(t.id, static_cast<int>(i)) << describe(p, static_cast<int>(i));
        for (int d : t.deps) {
          EXPECT_GE(d, 0) << describe(p, t.id);
          EXPECT_LT(d, t.id) << describe(p, t.id);
        }
        if (t.is_transfer()) {
          EXPECT_EQ(t.stream, StreamId::comm) << describe(p, t.id);
        }
        if (t.kind == TaskKind::gemm) {
          EXPECT_EQ(t.stream, StreamId::compute) << describe(p, t.id);
        }
      }
    }
  });
}

// Pairs every send half with the receive half it meets: the i-th send from r to p pairs with
// the i-th receive on p from r (MPI's non-overtaking order on one communicator).
struct Pairing {
  // (rank, task) of the send half -> (peer, task) of the receive half, and back.
  std::map<std::pair<int, int>, std::pair<int, int>> send_to_recv, recv_to_send;
};

Pairing pair_transfers(const std::vector<Plan>& plans) {
  Pairing out;
  const int n = static_cast<int>(plans.size());
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      std::vector<int> s, r;
      for (const Task& t : plans[src].tasks) {
        if (sends(t) && t.send_peer == dst) s.push_back(t.id);
      }
      for (const Task& t : plans[dst].tasks) {
        if (receives(t) && t.recv_peer == src) r.push_back(t.id);
      }
      for (size_t i = 0; i < std::min(s.size(), r.size()); ++i) {
        out.send_to_recv[{src, s[i]}] = {dst, r[i]};
        out.recv_to_send[{dst, r[i]}] = {src, s[i]};
      }
    }
  }
  return out;
}

// 2. Every send meets a receive on its peer with the same tag and as many elements, in order;
// every receive meets a send; all ranks run the same collectives in the same order.
TEST_P(PlanInvariants, TransfersMatch) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      for (const Task& t : p.tasks) {
        if (sends(t)) {
          ASSERT_LT(t.send_peer, world_) << describe(p, t.id);
        }
        if (receives(t)) {
          ASSERT_LT(t.recv_peer, world_) << describe(p, t.id);
        }
        if (is_p2p(t)) {
          EXPECT_TRUE(sends(t) || receives(t)) << describe(p, t.id) << " has no peer";
        }
      }
    }
    for (int src = 0; src < world_; ++src) {
      for (int dst = 0; dst < world_; ++dst) {
        const Plan& ps = plans_[src];
        const Plan& pd = plans_[dst];
        std::vector<int> send_tags, recv_tags;
        std::vector<int64_t> send_elems, recv_elems;
        for (const Task& t : ps.tasks) {
          if (sends(t) && t.send_peer == dst) {
            send_tags.push_back(t.tag);
            send_elems.push_back(t.a.rows * ps.buffers.at(t.a.buffer).cols);
            EXPECT_EQ(t.bytes, t.a.rows * ps.buffers.at(t.a.buffer).cols * 4) << describe(ps, t.id);
          }
        }
        for (const Task& t : pd.tasks) {
          if (receives(t) && t.recv_peer == src) {
            recv_tags.push_back(t.tag);
            recv_elems.push_back(t.c.rows * pd.buffers.at(t.c.buffer).cols);
          }
        }
        EXPECT_EQ(send_tags, recv_tags) << "tags sent " << src << " -> " << dst;
        EXPECT_EQ(send_elems, recv_elems) << "elements sent " << src << " -> " << dst;
      }
    }
    // Collectives: the k-th one on every rank is the same operation over the same block size.
    std::vector<std::vector<const Task*>> coll(static_cast<size_t>(world_));
    for (const Plan& p : plans_) {
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::collective) coll[static_cast<size_t>(p.rank)].push_back(&t);
      }
    }
    for (int r = 1; r < world_; ++r) {
      ASSERT_EQ(coll[static_cast<size_t>(r)].size(), coll[0].size()) << "rank " << r;
      for (size_t k = 0; k < coll[0].size(); ++k) {
        EXPECT_EQ(coll[static_cast<size_t>(r)][k]->op, coll[0][k]->op);
        EXPECT_EQ(coll[static_cast<size_t>(r)][k]->c.rows, coll[0][k]->c.rows);
      }
    }
  });
}

// Runs every rank's two streams together: a stream runs its tasks in order, a task starts when
// its deps are done, a point-to-point transfer completes once the peer has reached every
// counterpart (both halves of an exchange), a collective once every rank has reached its k-th
// collective. Returns the tasks that never finish (a cross-rank deadlock).
std::vector<std::string> unfinished_tasks(const std::vector<Plan>& plans) {
  const Pairing pairing = pair_transfers(plans);
  const size_t n = plans.size();
  std::vector<std::vector<char>> posted(n), done(n);
  std::vector<std::vector<int>> coll_index(n);
  std::vector<std::vector<std::vector<int>>> streams(n);
  for (size_t r = 0; r < n; ++r) {
    const Plan& p = plans[r];
    posted[r].assign(p.tasks.size(), 0);
    done[r].assign(p.tasks.size(), 0);
    coll_index[r].assign(p.tasks.size(), -1);
    streams[r].resize(kNumStreams);
    int k = 0;
    for (const Task& t : p.tasks) {
      streams[r][static_cast<size_t>(t.stream)].push_back(t.id);
      if (t.kind == TaskKind::collective) coll_index[r][static_cast<size_t>(t.id)] = k++;
    }
  }
  // How many ranks have reached each collective index.
  std::map<int, size_t> coll_posted;
  std::vector<std::vector<size_t>> head(n, std::vector<size_t>(kNumStreams, 0));
  auto reached = [&](std::pair<int, int> rt) {
    return posted[static_cast<size_t>(rt.first)][static_cast<size_t>(rt.second)] != 0;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      const Plan& p = plans[r];
      for (size_t s = 0; s < kNumStreams; ++s) {
        while (head[r][s] < streams[r][s].size()) {
          const int id = streams[r][s][head[r][s]];
          const size_t i = static_cast<size_t>(id);
          const Task& t = p.tasks[i];
          if (!posted[r][i]) {
            const bool ready = std::all_of(t.deps.begin(), t.deps.end(), [&](int d) {
              return d >= 0 && d < id && done[r][static_cast<size_t>(d)] != 0;
            });
            if (!ready) break;
            posted[r][i] = 1;
            progress = true;
            if (t.kind == TaskKind::collective) ++coll_posted[coll_index[r][i]];
          }
          bool complete = true;
          const std::pair<int, int> self{static_cast<int>(r), id};
          if (t.kind == TaskKind::collective) {
            complete = coll_posted[coll_index[r][i]] == n;
          } else if (is_p2p(t)) {
            if (sends(t)) {
              auto it = pairing.send_to_recv.find(self);
              complete = complete && it != pairing.send_to_recv.end() && reached(it->second);
            }
            if (receives(t)) {
              auto it = pairing.recv_to_send.find(self);
              complete = complete && it != pairing.recv_to_send.end() && reached(it->second);
            }
          }
          if (!complete) break;
          done[r][i] = 1;
          ++head[r][s];
          progress = true;
        }
      }
    }
  }
  std::vector<std::string> out;
  for (size_t r = 0; r < n; ++r) {
    for (const Task& t : plans[r].tasks) {
      if (!done[r][static_cast<size_t>(t.id)]) out.push_back(describe(plans[r], t.id));
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& s : items) text += (text.empty() ? "" : "; ") + s;
  return text;
}

// 1b. No cross-rank deadlock: every task of every rank finishes.
TEST_P(PlanInvariants, CrossRankScheduleCompletes) {
  for_each_world([&] {
    const std::vector<std::string> stuck = unfinished_tasks(plans_);
    EXPECT_TRUE(stuck.empty()) << "never finish: " << join(stuck);
  });
}

// 3. Every output block is computed exactly once.
TEST_P(PlanInvariants, OutputsComputedExactlyOnce) {
  SKIP_UNLESS(!reference_, "a reference mode's outputs are not the layer's");
  for_each_world([&] {
    for (const Plan& p : plans_) {
      if (has_ag()) {
        const int y = p.buffer_id("y");
        ASSERT_GE(y, 0);
        std::vector<Rows> written;
        for (const Task& t : p.tasks) {
          if (t.kind != TaskKind::gemm || t.c.buffer != y) continue;
          EXPECT_FALSE(t.accumulate) << describe(p, t.id);
          for (int i = 0; i < t.batch; ++i) {
            const int64_t row = t.c.row + i * t.c_step.rows;
            written.push_back({row, row + t.c.rows});
          }
        }
        EXPECT_TRUE(covers_exactly_once(written, tokens_)) << "Y on rank " << p.rank;
        // Nothing but GEMMs writes Y.
        for (const Task& t : p.tasks) {
          if (t.kind != TaskKind::gemm) {
            EXPECT_NE(t.c.buffer, y) << describe(p, t.id);
          }
        }
      }
      if (has_rs()) {
        const int h = h_buffer(p);
        const int z = p.buffer_id("z");
        ASSERT_GE(h, 0);
        ASSERT_GE(z, 0);
        // gemm_ar's Z holds every reduced block: its own from the reduce-scatter, the others
        // from the all-gather.
        const int64_t z_rows = layout_.all_reduce ? tokens_ : block_;
        EXPECT_EQ(p.buffers[static_cast<size_t>(z)].rows, z_rows);
        // Every row of this rank's H shard feeds exactly one GEMM: one partial per row.
        std::vector<Rows> read;
        for (const Task& t : p.tasks) {
          if (t.kind != TaskKind::gemm || t.a.buffer != h) continue;
          EXPECT_EQ(t.b.buffer, p.buffer_id("w2")) << describe(p, t.id);
          for (int i = 0; i < t.batch; ++i) {
            const int64_t row = t.a.row + i * t.a_step.rows;
            read.push_back({row, row + t.a.rows});
          }
        }
        EXPECT_TRUE(covers_exactly_once(read, tokens_)) << "H rows read on rank " << p.rank;
        std::vector<char> z_written(static_cast<size_t>(z_rows), 0);
        for (const Task& t : p.tasks) {
          if (t.c.buffer != z) continue;
          if (t.kind == TaskKind::send) continue;
          // An all-gather writes every rank's block at its stride.
          const bool gather = t.kind == TaskKind::collective && t.op == CollectiveOp::all_gather;
          for (int j = 0; j < (gather ? world_ : 1); ++j) {
            const int64_t first = t.c.row + (gather ? j * t.dst_stride_rows : 0);
            for (int64_t i = first; i < first + t.c.rows; ++i) {
              ASSERT_GE(i, 0);
              ASSERT_LT(i, z_rows) << describe(p, t.id);
              z_written[static_cast<size_t>(i)] = 1;
            }
          }
        }
        for (int64_t i = 0; i < z_rows; ++i) {
          EXPECT_TRUE(z_written[static_cast<size_t>(i)]) << "Z row " << i << " on rank " << p.rank;
        }
      }
    }
  });
}

// 8. Every rank does the GEMM work of both halves: 2*M*D*(F/N) each.
TEST_P(PlanInvariants, GemmFlopsPerHalf) {
  SKIP_UNLESS(!is_("comm_only") && !layout_.all_to_all,
              "no GEMMs (comm_only), or no AG/RS halves (ulysses: test_plans_ulysses.cpp)");
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
TEST_P(PlanInvariants, TransferCounts) {
  SKIP_UNLESS(!layout_.all_to_all, "ulysses' transfers are counted in test_plans_ulysses.cpp");
  for_each_world([&] {
    const int n = world_;
    // gemm_ar's all-reduce counts as two collectives: its reduce-scatter and its all-gather.
    // gemm_ar's all-reduce counts as two collectives (reduce-scatter and all-gather), and so
    // does mlp_bwd's second gather of X.
    const int halves =
        (has_ag() ? 1 : 0) + (has_rs() ? 1 : 0) + (layout_.all_reduce || layout_.backward ? 1 : 0);
    for (const Plan& p : plans_) {
      int exchanges = 0, collectives = 0, p2p_other = 0, gemms = 0, ag_exchanges = 0;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::exchange) {
          ++exchanges;
          if (in_ag(p, t)) ++ag_exchanges;
        }
        if (t.kind == TaskKind::collective) ++collectives;
        if (t.kind == TaskKind::send || t.kind == TaskKind::recv) ++p2p_other;
        if (t.kind == TaskKind::gemm) ++gemms;
      }
      const std::string where = "rank " + std::to_string(p.rank);
      EXPECT_EQ(p2p_other, 0) << where;
      if (is_("flash") || is_("flash_direct") || is_("flash_qs")) {
        EXPECT_EQ(collectives, 0) << where;
        EXPECT_EQ(exchanges, halves * param_ * (n - 1)) << where;
        EXPECT_EQ(ag_exchanges, has_ag() ? param_ * (n - 1) : 0) << where;
      } else if (is_("decompose")) {
        EXPECT_EQ(collectives, 0) << where;
        const int ag = has_ag() ? n - 1 : 0;
        const int rs = has_rs() && n > 1 ? n : 0;
        const int ar = layout_.all_reduce || layout_.backward ? n - 1 : 0;
        EXPECT_EQ(exchanges, ag + rs + ar) << where;
        EXPECT_EQ(ag_exchanges, ag) << where;
      } else if (is_("slicing") || is_("baseline") || is_("comm_only")) {
        EXPECT_EQ(exchanges, 0) << where;
        EXPECT_EQ(collectives, n > 1 ? halves * param_ : 0) << where;
      } else if (is_("compute_only")) {
        EXPECT_EQ(exchanges + collectives, 0) << where;
      } else {
        ADD_FAILURE() << "no expectation for " << spec_text_;
      }
      if (is_("comm_only")) {
        EXPECT_EQ(gemms, 0) << where;
      } else {
        EXPECT_GT(gemms, 0) << where;
      }
    }
  });
}

// 4. Flash's rank-adaptive order: the first AG GEMM touches no communication, the first RS
// GEMM (gemm_rs) neither, and the last GEMM never waits for the plan's last transfer, which
// therefore overlaps with it (only a local add is exposed). flash_direct's RS GEMMs never wait
// for a transfer at all.
TEST_P(PlanInvariants, FlashFirstAndLastComputation) {
  SKIP_UNLESS(is_("flash") || is_("flash_direct") || is_("flash_qs"),
              "a property of flash, flash_direct and flash_qs");
  for_each_world([&] {
    for (const Plan& p : plans_) {
      const auto closure = waits_for(p);
      int first_ag = -1, first_rs = -1, last_gemm = -1, last_transfer = -1;
      const int x = p.buffer_id("x");
      const int h = has_rs() ? h_buffer(p) : -1;
      for (const Task& t : p.tasks) {
        // The weight gradients follow the collectives they need; the property is the halves'.
        if (t.kind == TaskKind::gemm && !is_weight_gradient(p, t)) {
          last_gemm = t.id;
          if (has_ag() && t.a.buffer == x && first_ag < 0) first_ag = t.id;
          if (has_rs() && t.a.buffer == h && first_rs < 0) first_rs = t.id;
        }
        if (t.is_transfer()) last_transfer = t.id;
      }
      if (has_ag()) {
        ASSERT_GE(first_ag, 0);
        EXPECT_TRUE(p.tasks[static_cast<size_t>(first_ag)].deps.empty()) << describe(p, first_ag);
        EXPECT_FALSE(waits_for_transfer(p, closure, first_ag)) << describe(p, first_ag);
      }
      if (has_rs() && !has_ag()) {
        ASSERT_GE(first_rs, 0);
        EXPECT_TRUE(p.tasks[static_cast<size_t>(first_rs)].deps.empty()) << describe(p, first_rs);
        EXPECT_FALSE(waits_for_transfer(p, closure, first_rs)) << describe(p, first_rs);
      }
      ASSERT_GE(last_gemm, 0);
      if (has_rs()) {
        for (int d : p.tasks[static_cast<size_t>(last_gemm)].deps) {
          EXPECT_FALSE(p.tasks[static_cast<size_t>(d)].is_transfer())
              << describe(p, last_gemm) << " waits directly for " << describe(p, d);
        }
        if (last_transfer >= 0) {
          EXPECT_FALSE(closure[static_cast<size_t>(last_gemm)][static_cast<size_t>(last_transfer)])
              << describe(p, last_gemm) << " waits for the last transfer "
              << describe(p, last_transfer);
        }
      }
      if (is_("flash_direct") && has_rs() && !has_ag()) {
        for (const Task& t : p.tasks) {
          if (t.kind == TaskKind::gemm) {
            EXPECT_FALSE(waits_for_transfer(p, closure, t.id)) << describe(p, t.id);
          }
        }
      }
    }
  });
}

// 7. decompose's AG exchange k waits for step k-1's GEMM (the lock-step); Flash's AG transfers
// run free of every GEMM.
TEST_P(PlanInvariants, AgLockStepOrFreeRunning) {
  SKIP_UNLESS(
      has_ag() && (is_("decompose") || is_("flash") || is_("flash_direct") || is_("flash_qs")),
      "a property of decompose and flash's all-gather halves");
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
TEST_P(PlanInvariants, AttentionCoversEveryHeadOnce) {
  SKIP_UNLESS(layout_.attention && !is_("comm_only"), "no attention computed");
  for_each_world([&] {
    const int64_t s = geometry_.seq;
    const int64_t dh = geometry_.head_dim;
    for (const Plan& p : plans_) {
      const int o = p.buffer_id("o");
      // Q, K and V of this rank's heads: the all-gather GEMM's output, or ulysses' all-to-all's.
      const int y = p.buffer_id(layout_.all_to_all ? "qkv" : "y");
      const int scores = p.buffer_id("scores");
      ASSERT_GE(o, 0);
      ASSERT_GE(scores, 0);
      const int64_t width = p.buffers[static_cast<size_t>(o)].cols;
      std::vector<int> hits(static_cast<size_t>(tokens_ * width), 0);
      bool softmax_since_scores = false;
      int64_t scores_rows = -1, query_row = -1, query_rows = -1;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::gemm && t.c.buffer == scores) {
          // Q rows of one sequence against every key of that sequence.
          EXPECT_TRUE(t.transpose_b) << describe(p, t.id);
          EXPECT_EQ(t.a.buffer, y);
          EXPECT_EQ(t.b.buffer, y);
          EXPECT_EQ(t.a.row / s, (t.a.row + t.a.rows - 1) / s) << describe(p, t.id);
          EXPECT_EQ(t.b.row, t.a.row / s * s) << describe(p, t.id);
          EXPECT_EQ(t.b.rows, s) << describe(p, t.id);
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
          softmax_since_scores = false;
          scores_rows = t.a.rows * t.batch;
          query_row = t.a.row;
          query_rows = t.a.rows;
        } else if (t.kind == TaskKind::softmax) {
          EXPECT_EQ(t.c.buffer, scores);
          EXPECT_EQ(t.c.rows, scores_rows) << describe(p, t.id);
          EXPECT_EQ(t.c.row, 0);
          EXPECT_EQ(t.n, s) << "a softmax over every key " << describe(p, t.id);
          EXPECT_DOUBLE_EQ(t.scale, 1.0 / std::sqrt(static_cast<double>(dh)));
          softmax_since_scores = true;
        } else if (t.kind == TaskKind::gemm && t.c.buffer == o) {
          EXPECT_TRUE(softmax_since_scores) << describe(p, t.id) << " reads unnormalised scores";
          EXPECT_EQ(t.a.buffer, scores);
          EXPECT_EQ(t.b.col, 2 * width) << "values follow the keys " << describe(p, t.id);
          EXPECT_EQ(t.b.row, t.c.row / s * s) << describe(p, t.id);
          // Head i's probabilities, values and output columns; the queries just scored.
          EXPECT_EQ(t.c.row, query_row) << describe(p, t.id);
          EXPECT_EQ(t.c.rows, query_rows) << describe(p, t.id);
          EXPECT_EQ(t.a.row, 0);
          EXPECT_EQ(t.a_step.rows, query_rows);
          EXPECT_EQ(t.a_step.cols, 0);
          EXPECT_EQ(t.b_step.cols, dh);
          EXPECT_EQ(t.c_step.cols, dh);
          for (int i = 0; i < t.batch; ++i) {
            const int64_t col = t.c.col + i * t.c_step.cols;
            for (int64_t r = t.c.row; r < t.c.row + t.c.rows; ++r) {
              for (int64_t c = col; c < col + t.n; ++c) {
                ++hits[static_cast<size_t>(r * width + c)];
              }
            }
          }
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
TEST_P(PlanInvariants, QuerySplitHidesTransfersBehindAttention) {
  // Ulysses' first all-to-all precedes the attention: test_plans_ulysses.cpp.
  SKIP_UNLESS(layout_.attention && !layout_.all_to_all && !reference_,
              "a property of attn's overlapping strategies");
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

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (Workload w : all_workloads()) {
    for (const char* s : kSpecs) {
      if (strategy_applies(*parse_strategy(s).strategy, w)) out.emplace_back(w, s);
    }
  }
  return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string spec = std::get<1>(info.param);
  std::replace(spec.begin(), spec.end(), ':', '_');
  return std::string(to_string(std::get<0>(info.param))) + "_" + spec;
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, PlanInvariants, ::testing::ValuesIn(all_params()),
                         param_name);

// Every built-in strategy is covered above.
TEST(PlanCoverage, EveryStrategyIsTested) {
  for (const Strategy* s : all_strategies()) {
    bool found = false;
    for (const char* spec : kSpecs) {
      if (parse_strategy(spec).strategy == s) found = true;
    }
    EXPECT_TRUE(found) << s->name;
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
TEST(PlanCheckers, SimulationFindsDeadlock) {
  // flash_direct on 3 ranks: rank 0 exchanges with (1, 2) then (2, 1). Swapping the two makes
  // rank 0 wait for rank 1's second exchange while rank 1 waits for rank 0's second one.
  const CaseSpec c = case_for(find_workload("ag_gemm"), "flash_direct", 3);
  std::vector<Plan> plans;
  for (int r = 0; r < 3; ++r) plans.push_back(make_plan(c, r));
  ASSERT_TRUE(unfinished_tasks(plans).empty());
  std::vector<Task*> ex;
  for (Task& t : plans[0].tasks) {
    if (t.kind == TaskKind::exchange) ex.push_back(&t);
  }
  ASSERT_EQ(ex.size(), 2u);
  std::swap(ex[0]->send_peer, ex[1]->send_peer);
  std::swap(ex[0]->recv_peer, ex[1]->recv_peer);
  EXPECT_FALSE(unfinished_tasks(plans).empty());
}

TEST(PlanCheckers, SimulationFindsMissingCollective) {
  const CaseSpec c = case_for(find_workload("gemm_rs"), "baseline", 2);
  std::vector<Plan> plans = {make_plan(c, 0), make_plan(c, 1)};
  ASSERT_TRUE(unfinished_tasks(plans).empty());
  for (Task& t : plans[1].tasks) {
    if (t.kind == TaskKind::collective) t.kind = TaskKind::copy;
  }
  EXPECT_FALSE(unfinished_tasks(plans).empty());
}

TEST(PlanCheckers, SimulationFindsUnmatchedSend) {
  const CaseSpec c = case_for(find_workload("ag_gemm"), "decompose", 2);
  std::vector<Plan> plans = {make_plan(c, 0), make_plan(c, 1)};
  ASSERT_TRUE(unfinished_tasks(plans).empty());
  for (Task& t : plans[1].tasks) {
    if (t.kind == TaskKind::exchange) t.recv_peer = -1;
  }
  EXPECT_FALSE(unfinished_tasks(plans).empty());
}

TEST(PlanCheckers, Coverage) {
  EXPECT_TRUE(covers_exactly_once({{0, 2}, {2, 4}}, 4));
  EXPECT_FALSE(covers_exactly_once({{0, 3}, {2, 4}}, 4));
  EXPECT_FALSE(covers_exactly_once({{0, 2}}, 4));
  EXPECT_FALSE(covers_exactly_once({{0, 5}}, 4));
}

}  // namespace
}  // namespace fob
