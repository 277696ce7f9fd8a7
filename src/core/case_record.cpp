#include "fob/results.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fob {

CaseResult case_from_plan(const Plan& plan, int world, const std::string& id) {
  CaseResult result;
  result.id = id;
  result.workload = to_string(plan.workload);
  result.strategy = plan.strategy;
  result.batch = plan.shape.batch;
  result.seq = plan.shape.seq;
  result.hidden = plan.shape.hidden;
  result.ffn = plan.shape.ffn;
  result.heads = plan.shape.head_count();
  result.dtype = to_string(plan.dtype);
  result.world = world;
  result.iters = 0;
  return result;
}

int32_t recorded_peer(const Task& task) {
  if (!task.is_transfer()) return -1;
  return task.send_peer >= 0 ? task.send_peer : task.recv_peer;
}

double CaseResult::step(int iter) const {
  if (iter < 0 || iter >= iters || world <= 0 ||
      step_seconds.size() < static_cast<size_t>(iters) * static_cast<size_t>(world)) {
    throw std::out_of_range("case " + id + ": no step " + std::to_string(iter));
  }
  const double* row = step_seconds.data() + static_cast<size_t>(iter) * world;
  double slowest = row[0];
  // NaN must win: a rank without a time means the step's time is unknown, not its peers' max.
  for (int r = 1; r < world; ++r) {
    if (std::isnan(row[r]) || row[r] > slowest) slowest = row[r];
    if (std::isnan(slowest)) break;
  }
  return slowest;
}

}  // namespace fob
