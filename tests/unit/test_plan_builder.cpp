// PlanBuilder's cross-stream dependencies against a brute-force scan of every earlier task.
// The strategies' own plans (test_plans.cpp) use buffers of at most 64 rows, one word of the
// builder's row bitmap; here random row ranges over buffers of several words cross word edges,
// start and end inside words and cover whole words, in every combination the seed reaches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fob/plan.h"
#include "fob/plan_builder.h"

namespace fob {
namespace {

struct Touch {
  StreamId stream;
  int buffer;
  int64_t begin, end;
  bool writes;  // else reads
};

bool overlaps(const Touch& a, const Touch& b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

// The latest earlier task on the other stream that the new task conflicts with: it reads rows
// the other wrote, or writes rows the other read or wrote. -1 when none.
int expected_dep(const std::vector<std::vector<Touch>>& history, const std::vector<Touch>& now) {
  for (int id = static_cast<int>(history.size()) - 1; id >= 0; --id) {
    for (const Touch& old : history[static_cast<size_t>(id)]) {
      if (old.stream == now.front().stream) break;
      for (const Touch& t : now) {
        if (overlaps(old, t) && (old.writes || t.writes)) return id;
      }
    }
  }
  return -1;
}

TEST(PlanBuilder, DependenciesMatchABruteForceScan) {
  // Row counts around word multiples, and one below a word.
  const int64_t kRows[] = {300, 129, 64, 40};
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 20; ++trial) {
    Plan plan;
    plan.world = 2;
    plan.rank = 0;
    PlanBuilder b(plan);
    std::vector<int> buffers;
    for (size_t i = 0; i < std::size(kRows); ++i) {
      buffers.push_back(b.buffer("buf" + std::to_string(i), kRows[i], 4));
    }
    std::vector<std::vector<Touch>> history;
    for (int step = 0; step < 400; ++step) {
      const size_t which = rng() % buffers.size();
      const int buf = buffers[which];
      const int64_t rows = kRows[which];
      // Ranges of 1 row to the whole buffer, often a word edge or two apart.
      auto range = [&](int64_t& begin, int64_t& len) {
        begin = static_cast<int64_t>(rng() % static_cast<uint64_t>(rows));
        const int64_t room = rows - begin;
        len = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min<int64_t>(room, 140)));
      };
      int64_t begin = 0, len = 0, src = 0, src_len = 0;
      range(begin, len);
      range(src, src_len);
      len = std::min(len, src_len);
      const View dst{buf, begin, len};
      const View from{buf, src, len};
      std::vector<Touch> touches;
      int id = -1;
      switch (rng() % 4) {
        case 0:  // compute: dst = src
          id = b.copy(dst, from, "copy");
          touches = {{StreamId::compute, buf, src, src + len, false},
                     {StreamId::compute, buf, begin, begin + len, true}};
          break;
        case 1:  // compute: dst += src
          id = b.add(dst, from, "add");
          touches = {{StreamId::compute, buf, src, src + len, false},
                     {StreamId::compute, buf, begin, begin + len, false},
                     {StreamId::compute, buf, begin, begin + len, true}};
          break;
        case 2:  // comm: send rows
          id = b.send(from, 1, step, "send");
          touches = {{StreamId::comm, buf, src, src + len, false}};
          break;
        default:  // comm: receive rows
          id = b.recv(dst, 1, step, "recv");
          touches = {{StreamId::comm, buf, begin, begin + len, true}};
          break;
      }
      const int want = expected_dep(history, touches);
      const std::vector<int>& deps = plan.tasks[static_cast<size_t>(id)].deps;
      if (want < 0) {
        ASSERT_TRUE(deps.empty()) << "trial " << trial << " task " << id << " dep " << deps[0];
      } else {
        ASSERT_EQ(deps, std::vector<int>{want}) << "trial " << trial << " task " << id;
      }
      history.push_back(touches);
    }
  }
}

}  // namespace
}  // namespace fob
