// Transfer tasks as point-to-point messages (transfer_messages.h), which a transport that moves
// data itself matches in posting order: for every workload and strategy at worlds 1..8, the
// n-th message rank r sends to rank d has the bytes of the n-th message d expects from r, every
// message lies in whole rows of its buffer, and a collective's messages cover its blocks once.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fob/transfer_messages.h"
#include "plan_invariants.h"

namespace fob::plan_test {
namespace {

using Role = Message::Role;

struct Posted {
  int task;
  int64_t bytes;
};

class Messages : public PlanInvariants {
 protected:
  // Per ordered pair (from, to): what `from` sends to `to`, and what `to` expects from `from`.
  using Pairs = std::map<std::pair<int, int>, std::vector<Posted>>;

  void collect(Pairs& sent, Pairs& expected) const {
    for (const Plan& p : plans_) {
      for (const Task& t : p.tasks) {
        for (const Message& m : transfer_messages(p, t)) {
          expect_whole_rows(p, t, m);
          const Posted posted{t.id, message_bytes(p, m)};
          if (m.role == Role::send) sent[{p.rank, m.peer}].push_back(posted);
          if (m.role == Role::receive || m.role == Role::reduce) {
            expected[{m.peer, p.rank}].push_back(posted);
          }
        }
      }
    }
  }

  static void expect_whole_rows(const Plan& p, const Task& t, const Message& m) {
    const std::string where = "rank " + std::to_string(p.rank) + " task " + std::to_string(t.id);
    for (const View* v : {&m.view, m.role == Role::local ? &m.from : nullptr}) {
      if (!v) continue;
      ASSERT_GE(v->buffer, 0) << where;
      ASSERT_LT(v->buffer, static_cast<int>(p.buffers.size())) << where;
      EXPECT_EQ(v->col, 0) << where;
      EXPECT_GE(v->row, 0) << where;
      EXPECT_GT(v->rows, 0) << where;
      EXPECT_LE(v->row + v->rows, p.buffers[v->buffer].rows) << where;
    }
    if (m.role != Role::local) {
      EXPECT_GE(m.peer, 0) << where;
      EXPECT_LT(m.peer, p.world) << where;
      EXPECT_NE(m.peer, p.rank) << where;
    }
  }
};
INSTANTIATE_PLAN_SUITE(Messages, [](Workload, const Strategy&) { return true; });

TEST_P(Messages, EverySendMeetsAReceiveOfItsSizeInPostingOrder) {
  for_each_world([&] {
    Pairs sent, expected;
    collect(sent, expected);
    for (const auto& [pair, sends] : sent) {
      const auto& receives = expected[pair];
      SCOPED_TRACE("from rank " + std::to_string(pair.first) + " to " +
                   std::to_string(pair.second));
      ASSERT_EQ(sends.size(), receives.size());
      for (size_t n = 0; n < sends.size(); ++n) {
        EXPECT_EQ(sends[n].bytes, receives[n].bytes)
            << "message " << n << ": task " << sends[n].task << " sends, task " << receives[n].task
            << " receives";
      }
    }
    for (const auto& [pair, receives] : expected) {
      EXPECT_TRUE(receives.empty() || sent.count(pair) > 0)
          << "rank " << pair.second << " expects " << receives.size() << " messages from rank "
          << pair.first << ", which sends none";
    }
    if (world_ > 1 && !is_("compute_only")) {
      EXPECT_FALSE(sent.empty()) << spec_text_;
    }
  });
}

// A collective's receives and local copies write each of its world blocks (chunks) once.
TEST_P(Messages, CollectivesWriteEveryBlockOnce) {
  for_each_world([&] {
    for (const Plan& p : plans_) {
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::collective) continue;
        std::map<int64_t, int> written;  // first row -> messages writing it
        int sends = 0;
        for (const Message& m : transfer_messages(p, t)) {
          if (m.role == Role::send) {
            ++sends;
          } else if (m.role != Role::reduce) {
            ++written[m.view.row];
          }
        }
        // An all-to-all's chunks, or an uneven one's spans, are its messages.
        int peer_sends = world_ - 1;
        size_t blocks = t.op == CollectiveOp::reduce_scatter ? 1 : world_;
        if (t.op == CollectiveOp::all_to_all) {
          const PeerSpans spans = all_to_all_blocks(p, t);
          peer_sends = 0;
          blocks = 0;
          for (int j = 0; j < world_; ++j) {
            if (j != p.rank) peer_sends += static_cast<int>(spans.send[j].size());
            blocks += spans.recv[j].size();
          }
        }
        EXPECT_EQ(sends, peer_sends) << "task " << t.id;
        EXPECT_EQ(written.size(), blocks) << "task " << t.id;
        for (const auto& [row, count] : written) EXPECT_EQ(count, 1) << "row " << row;
      }
    }
  });
}

TEST(Messages, NoneForComputeTasks) {
  Plan plan;
  plan.world = 2;
  Task gemm;
  gemm.kind = TaskKind::gemm;
  EXPECT_TRUE(transfer_messages(plan, gemm).empty());
}

}  // namespace
}  // namespace fob::plan_test
