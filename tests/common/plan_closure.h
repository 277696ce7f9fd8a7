// What a task of a plan waits for, transitively: its dependencies and, on its stream, the task
// before it. Shared by the plan invariant tests.
#pragma once

#include <vector>

#include "fob/plan.h"

namespace fob {

// For every task: whether it transitively waits (deps, or an earlier task on its stream) for
// a transfer, and for which tasks it waits, as a bitmap.
inline std::vector<std::vector<bool>> waits_for(const Plan& plan) {
  const size_t n = plan.tasks.size();
  std::vector<std::vector<bool>> closure(n, std::vector<bool>(n, false));
  int last_on_stream[kNumStreams] = {-1, -1};
  for (size_t i = 0; i < n; ++i) {
    const Task& t = plan.tasks[i];
    std::vector<int> direct = t.deps;
    int& prev = last_on_stream[static_cast<int>(t.stream)];
    if (prev >= 0) direct.push_back(prev);
    prev = static_cast<int>(i);
    for (int d : direct) {
      closure[i][static_cast<size_t>(d)] = true;
      for (size_t j = 0; j < n; ++j) {
        if (closure[static_cast<size_t>(d)][j]) closure[i][j] = true;
      }
    }
  }
  return closure;
}

inline bool waits_for_transfer(const Plan& plan, const std::vector<std::vector<bool>>& closure,
                               int task) {
  for (size_t j = 0; j < plan.tasks.size(); ++j) {
    if (closure[static_cast<size_t>(task)][j] && plan.tasks[j].is_transfer()) return true;
  }
  return false;
}

}  // namespace fob
