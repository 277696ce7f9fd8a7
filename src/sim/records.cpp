#include <algorithm>
#include <limits>

#include "fob/sim.h"

namespace fob {

void fill_task_records(const std::vector<Plan>& plans, int iters, CaseResult& result) {
  int32_t max_tasks = 0;
  for (const Plan& p : plans) max_tasks = std::max(max_tasks, static_cast<int32_t>(p.tasks.size()));
  const size_t world = plans.size();
  const size_t per_iter = world * static_cast<size_t>(max_tasks);
  result.max_tasks = max_tasks;
  result.tasks.assign(per_iter, TaskRecord{});
  result.deps.clear();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  result.task_start.assign(static_cast<size_t>(iters) * per_iter, nan);
  result.task_end.assign(static_cast<size_t>(iters) * per_iter, nan);
  for (size_t r = 0; r < world; ++r) {
    for (const Task& t : plans[r].tasks) {
      TaskRecord& rec =
          result.tasks[r * static_cast<size_t>(max_tasks) + static_cast<size_t>(t.id)];
      rec.rank = static_cast<int32_t>(r);
      rec.task = t.id;
      rec.stream = static_cast<int8_t>(t.stream);
      rec.kind = static_cast<int8_t>(t.kind);
      rec.peer = recorded_peer(t);
      rec.bytes = t.bytes;
      rec.flops = t.flops;
      // The file stores labels as fixed-length strings of 63 characters.
      rec.label.assign(t.label, 0, 63);
      for (int d : t.deps) result.deps.push_back({static_cast<int32_t>(r), t.id, d});
    }
  }
}

}  // namespace fob
