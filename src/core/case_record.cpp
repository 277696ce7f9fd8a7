#include "fob/results.h"

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

}  // namespace fob
