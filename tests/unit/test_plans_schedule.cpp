// Plan invariants of the schedule: dependencies point backwards, transfers pair up across
// ranks, the cross-rank schedule completes, every output is computed exactly once; and the
// checkers themselves catch a deadlock, a missing collective and an unmatched send.
#include "fob/transfer_messages.h"
#include "plan_invariants.h"

namespace fob::plan_test {
namespace {

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

// Collectives: the k-th one on every rank is the same operation over the same block size, or,
// uneven (all-to-all-v), over spans that pair: what rank r sends j, span by span, has the rows
// of what j receives from r.
void expect_collectives_match(const std::vector<Plan>& plans, int world) {
  std::vector<std::vector<const Task*>> coll(static_cast<size_t>(world));
  for (const Plan& p : plans) {
    for (const Task& t : p.tasks) {
      if (t.kind == TaskKind::collective) coll[static_cast<size_t>(p.rank)].push_back(&t);
    }
  }
  for (int r = 1; r < world; ++r) {
    ASSERT_EQ(coll[static_cast<size_t>(r)].size(), coll[0].size()) << "rank " << r;
    for (size_t k = 0; k < coll[0].size(); ++k) {
      const Task& mine = *coll[static_cast<size_t>(r)][k];
      EXPECT_EQ(mine.op, coll[0][k]->op);
      EXPECT_EQ(mine.spans >= 0, coll[0][k]->spans >= 0) << "rank " << r << " collective " << k;
      if (mine.spans < 0) {
        EXPECT_EQ(mine.c.rows, coll[0][k]->c.rows);
      }
    }
  }
  for (size_t k = 0; k < coll[0].size(); ++k) {
    if (coll[0][k]->spans < 0) continue;
    for (int r = 0; r < world; ++r) {
      const PeerSpans from = all_to_all_blocks(plans[r], *coll[static_cast<size_t>(r)][k]);
      for (int j = 0; j < world; ++j) {
        const PeerSpans to = all_to_all_blocks(plans[j], *coll[static_cast<size_t>(j)][k]);
        const std::vector<RowSpan>& sent = from.send[static_cast<size_t>(j)];
        const std::vector<RowSpan>& received = to.recv[static_cast<size_t>(r)];
        ASSERT_EQ(sent.size(), received.size()) << r << " -> " << j << " collective " << k;
        for (size_t i = 0; i < sent.size(); ++i) {
          EXPECT_EQ(sent[i].rows, received[i].rows);
        }
      }
    }
  }
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
    expect_collectives_match(plans_, world_);
  });
}

// Runs every rank's two streams together: a stream runs its tasks in order, a task starts when
// its deps are done, a point-to-point transfer completes once the peer has reached every
// counterpart (both halves of an exchange), a collective once every rank has reached its k-th
// collective. What never finishes is a cross-rank deadlock.
class StreamRun {
 public:
  explicit StreamRun(const std::vector<Plan>& plans)
      : plans_(plans), pairing_(pair_transfers(plans)), n_(plans.size()) {
    posted_.resize(n_);
    done_.resize(n_);
    coll_index_.resize(n_);
    streams_.resize(n_);
    head_.assign(n_, std::vector<size_t>(kNumStreams, 0));
    for (size_t r = 0; r < n_; ++r) {
      const Plan& p = plans[r];
      posted_[r].assign(p.tasks.size(), 0);
      done_[r].assign(p.tasks.size(), 0);
      coll_index_[r].assign(p.tasks.size(), -1);
      streams_[r].resize(kNumStreams);
      int k = 0;
      for (const Task& t : p.tasks) {
        streams_[r][static_cast<size_t>(t.stream)].push_back(t.id);
        if (t.kind == TaskKind::collective) coll_index_[r][static_cast<size_t>(t.id)] = k++;
      }
    }
  }

  // The tasks that never finish, each described.
  std::vector<std::string> unfinished() {
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t r = 0; r < n_; ++r) {
        for (size_t s = 0; s < kNumStreams; ++s) {
          while (head_[r][s] < streams_[r][s].size() && advance(r, streams_[r][s][head_[r][s]])) {
            ++head_[r][s];
            progress = true;
          }
          progress |= posted_here_;
          posted_here_ = false;
        }
      }
    }
    std::vector<std::string> out;
    for (size_t r = 0; r < n_; ++r) {
      for (const Task& t : plans_[r].tasks) {
        if (!done_[r][static_cast<size_t>(t.id)]) out.push_back(describe(plans_[r], t.id));
      }
    }
    return out;
  }

 private:
  // Posts task `id` of rank r once its deps are done; whether it is then done.
  bool advance(size_t r, int id) {
    const size_t i = static_cast<size_t>(id);
    const Task& t = plans_[r].tasks[i];
    if (!posted_[r][i]) {
      const bool ready = std::all_of(t.deps.begin(), t.deps.end(), [&](int d) {
        return d >= 0 && d < id && done_[r][static_cast<size_t>(d)] != 0;
      });
      if (!ready) return false;
      posted_[r][i] = 1;
      posted_here_ = true;
      if (t.kind == TaskKind::collective) ++coll_posted_[coll_index_[r][i]];
    }
    if (!complete(r, t)) return false;
    done_[r][i] = 1;
    return true;
  }

  bool complete(size_t r, const Task& t) {
    if (t.kind == TaskKind::collective) {
      return coll_posted_[coll_index_[r][static_cast<size_t>(t.id)]] == n_;
    }
    if (!is_p2p(t)) return true;
    const std::pair<int, int> self{static_cast<int>(r), t.id};
    return (!sends(t) || reached(pairing_.send_to_recv, self)) &&
           (!receives(t) || reached(pairing_.recv_to_send, self));
  }

  // Whether the counterpart of `self` in `pairs` exists and its rank has posted it.
  template <typename Pairs>
  bool reached(const Pairs& pairs, std::pair<int, int> self) const {
    const auto it = pairs.find(self);
    if (it == pairs.end()) return false;
    const auto [rank, task] = it->second;
    return posted_[static_cast<size_t>(rank)][static_cast<size_t>(task)] != 0;
  }

  const std::vector<Plan>& plans_;
  const Pairing pairing_;
  const size_t n_;
  std::vector<std::vector<char>> posted_, done_;
  std::vector<std::vector<int>> coll_index_;
  std::vector<std::vector<std::vector<int>>> streams_;
  std::vector<std::vector<size_t>> head_;
  std::map<int, size_t> coll_posted_;  // how many ranks have reached each collective index
  bool posted_here_ = false;
};

std::vector<std::string> unfinished_tasks(const std::vector<Plan>& plans) {
  return StreamRun(plans).unfinished();
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

// 3. Every output block is computed exactly once (a reference mode's outputs are not the layer's).
class LayerOutputs : public PlanInvariants {
 protected:
  // The all-gather GEMMs write every row of Y once, and nothing else writes it.
  void expect_y_once(const Plan& p) const {
    const int y = p.buffer_id("y");
    ASSERT_GE(y, 0);
    std::vector<Rows> written;
    for (const Task& t : p.tasks) {
      if (t.kind != TaskKind::gemm) {
        EXPECT_NE(t.c.buffer, y) << describe(p, t.id);
        continue;
      }
      if (t.c.buffer != y) continue;
      EXPECT_FALSE(t.accumulate) << describe(p, t.id);
      for (int i = 0; i < t.batch; ++i) {
        const int64_t row = t.c.row + i * t.c_step.rows;
        written.push_back({row, row + t.c.rows});
      }
    }
    EXPECT_TRUE(covers_exactly_once(written, tokens_)) << "Y on rank " << p.rank;
  }

  // Every row of this rank's H shard feeds exactly one GEMM: one partial per row.
  void expect_h_read_once(const Plan& p, int h) const {
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
  }

  // Every row of Z is written: gemm_ar's Z holds every reduced block (its own from the
  // reduce-scatter, the others from the all-gather), the others' their own block.
  void expect_z_written(const Plan& p, int z) const {
    const int64_t z_rows = layout_.all_reduce ? tokens_ : block_;
    EXPECT_EQ(p.buffers[static_cast<size_t>(z)].rows, z_rows);
    std::vector<char> z_written(static_cast<size_t>(z_rows), 0);
    for (const Task& t : p.tasks) {
      if (t.c.buffer != z || t.kind == TaskKind::send) continue;
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
};
// moe's output is a weighted sum of gathered rows, not a GEMM's (test_plans_moe.cpp).
INSTANTIATE_PLAN_SUITE(LayerOutputs, [](Workload w, const Strategy& s) {
  return !s.is_reference() && !(w->patterns & kMoeLayer);
});

TEST_P(LayerOutputs, OutputsComputedExactlyOnce) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      if (has_ag()) expect_y_once(p);
      if (!has_rs()) continue;
      const int h = h_buffer(p);
      const int z = p.buffer_id("z");
      ASSERT_GE(h, 0);
      ASSERT_GE(z, 0);
      expect_h_read_once(p, h);
      expect_z_written(p, z);
    }
  });
}

// 8. Every rank does the GEMM work of both halves: 2*M*D*(F/N) each.

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
}  // namespace fob::plan_test
