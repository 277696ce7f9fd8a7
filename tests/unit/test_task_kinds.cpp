// Every task kind's facts are filled in task_kind_info (plan.h), the one place a new kind
// declares what the rest of fobench asks of it.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "fob/plan.h"

namespace fob {
namespace {

TEST(TaskKinds, EveryKindHasItsFacts) {
  std::set<std::string> names, colours;
  for (int k = 0; k < kNumTaskKinds; ++k) {
    const TaskKindInfo info = task_kind_info(k);
    SCOPED_TRACE("task kind " + std::to_string(k));
    EXPECT_STRNE(info.name, TaskKindInfo{}.name) << "task_kind_info has no row for this kind";
    EXPECT_TRUE(std::regex_match(info.name, std::regex("[a-z_]+")));
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " is named twice";
    EXPECT_TRUE(std::regex_match(info.colour, std::regex("#[0-9a-f]{6}")));
    EXPECT_STRNE(info.colour, TaskKindInfo{}.colour) << info.name << " has the unknown's grey";
    EXPECT_TRUE(colours.insert(info.colour).second) << info.name << "'s colour is another's";
    // A kind moves bytes or computes, and only transfers hold point-to-point halves.
    EXPECT_FALSE(info.transfer && info.elementwise) << info.name;
    if (info.send_half || info.recv_half) {
      EXPECT_TRUE(info.transfer) << info.name;
    }
  }
}

// A kind added after the last one without moving kNumTaskKinds would be read back from results
// files as out of range.
TEST(TaskKinds, CountReachesTheLastKind) {
  EXPECT_STREQ(task_kind_info(static_cast<TaskKind>(kNumTaskKinds)).name, TaskKindInfo{}.name)
      << "task_kind_info knows a kind past kNumTaskKinds: make the new kind the last in plan.h";
  EXPECT_STREQ(task_kind_info(kNumTaskKinds).name, TaskKindInfo{}.name);
  EXPECT_STREQ(task_kind_info(-1).name, TaskKindInfo{}.name);
}

}  // namespace
}  // namespace fob
