// The engine's bootstrap allgather across real processes: what ncclCommSplit and a
// communicator's init exchange. It delivers every rank's bytes, does not wait behind (or take
// a turn from) operations blocked on streams, and a rank that never makes the call is reported.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "internal.h"
#include "ranks.h"

namespace fobnccl::test {
namespace {

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(NcclBootstrap, EveryRanksBytesLandAtItsRank) {
  const Outcome o = run_ranks(3, [](Comm& c) {
    for (int round = 0; round < 3; ++round) {
      const int64_t mine[2] = {c.rank() * 10 + round, -c.rank()};
      std::vector<int64_t> all(2 * c.nranks(), -99);
      if (c.bootstrap_allgather(mine, sizeof mine, all.data(), "test") != kSuccess) return 1;
      for (int r = 0; r < c.nranks(); ++r) {
        if (all[2 * r] != r * 10 + round || all[2 * r + 1] != -r) return 2;
      }
    }
    return 0;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{0, 0, 0})) << o.err;
}

// Rank 0 waits in an operation for rank 1's send, which rank 1 makes only after the bootstrap:
// on channels shared with the operations this would wait forever.
TEST(NcclBootstrap, ItDoesNotWaitBehindABlockedOperation) {
  const Outcome o = run_ranks(2, [](Comm& c) {
    std::vector<float> buf(64, static_cast<float>(c.rank()));
    std::thread operation;
    if (c.rank() == 0) {
      operation = std::thread(
          [&] { c.run({make_call(Kind::recv, nullptr, buf.data(), buf.size(), DType::f32, 1)}); });
    }
    int mine = c.rank() + 5, all[2] = {0, 0};
    if (c.bootstrap_allgather(&mine, sizeof mine, all, "test") != kSuccess) return 1;
    if (c.rank() == 1) {
      c.run({make_call(Kind::send, buf.data(), nullptr, buf.size(), DType::f32, 0)});
    } else {
      operation.join();
      if (buf[0] != 1.0f) return 3;
    }
    return all[0] == 5 && all[1] == 6 ? 0 : 2;
  });
  EXPECT_EQ(o.codes, (std::vector<int>{0, 0})) << o.err;
}

TEST(NcclBootstrap, ARankThatNeverMakesTheCallIsReportedAfterJoinS) {
  const Outcome o = run_ranks(
      2,
      [](Comm& c) {
        if (c.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(6));
          return 0;
        }
        int mine = 0, all[2];
        c.bootstrap_allgather(&mine, sizeof mine, all, "ncclCommSplit");
        return 0;
      },
      2, 30, 1.5);
  EXPECT_EQ(o.codes[0], kViolationExit) << o.err;
  EXPECT_TRUE(has(o.err,
                  "[cuda model] deadlock: ncclCommSplit: rank 0 waited 1 s for rank(s) 1 to make "
                  "the same call"))
      << o.err;
}

}  // namespace
}  // namespace fobnccl::test
