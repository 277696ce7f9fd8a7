#include "fob/device_plan.h"

#include <algorithm>
#include <vector>

#include <cstdlib>
#include <map>

namespace fob {

int select_device(int local_rank, int device_count, const char* override_text) {
  if (device_count <= 0) throw InputError("backend: 'cuda' but no CUDA device is visible");
  if (override_text && *override_text) {
    char* end = nullptr;
    long device = std::strtol(override_text, &end, 10);
    if (*end != '\0' || device < 0 || device >= device_count) {
      throw InputError(std::string("FOB_DEVICE: '") + override_text +
                       "' is not a visible device; valid: 0.." + std::to_string(device_count - 1));
    }
    return static_cast<int>(device);
  }
  return local_rank % device_count;
}

std::pair<int, int> ranks_sharing_a_device(const std::vector<std::string>& host_bus_ids) {
  std::map<std::string, int> first;
  for (int r = 0; r < static_cast<int>(host_bus_ids.size()); ++r) {
    auto [it, inserted] = first.emplace(host_bus_ids[r], r);
    if (!inserted) return {it->second, r};
  }
  return {-1, -1};
}

int64_t device_bytes_needed(const Plan& plan, int64_t workspace_bytes) {
  return plan.buffer_bytes() + workspace_bytes;
}

int64_t stage_elements(const Plan& plan) {
  int64_t most = 0;
  for (const Task& t : plan.tasks) {
    if (t.kind != TaskKind::collective) continue;
    const int64_t block = t.c.rows * plan.buffers[t.c.buffer].cols;
    if (t.op == CollectiveOp::all_gather && t.dst_stride_rows != t.c.rows) {
      most = std::max(most, plan.world * block);
    }
    if (t.op == CollectiveOp::reduce_scatter) {
      if (t.src_stride_rows != t.c.rows) most = std::max(most, plan.world * block);
      if (plan.input_period > 0) most = std::max(most, block);
    }
  }
  return most;
}

bool graph_capture_eligible(const Plan& plan, const std::string& transport, std::string* why) {
  if (transport != "nccl") {
    if (why) *why = "transport " + transport + " stages transfers through a host thread";
    return false;
  }
  if (plan.tasks.empty()) {
    if (why) *why = "the plan has no tasks";
    return false;
  }
  return true;
}

bool plan_overlaps(const Plan& plan) {
  // Plan order is a topological order (a task depends only on earlier tasks) and each stream
  // runs in order, so the compute tasks that reach a comm task are a prefix of the compute
  // stream, and those it reaches a suffix. The comm task can overlap compute exactly when
  // some compute task lies between the two.
  const size_t n = plan.tasks.size();
  std::vector<int> position(n, -1);  // a compute task's place on its stream
  int computes = 0;
  for (const Task& t : plan.tasks) {
    if (t.stream == StreamId::compute) position[t.id] = computes++;
  }
  if (computes == 0) return false;
  std::vector<std::vector<int>> next(n);  // dependents, and the next task of the same stream
  std::vector<int> last_on(kNumStreams, -1);
  for (const Task& t : plan.tasks) {
    for (int d : t.deps) next[d].push_back(t.id);
    int& prev = last_on[static_cast<int>(t.stream)];
    if (prev >= 0) next[prev].push_back(t.id);
    prev = t.id;
  }
  // Latest compute position that reaches each task (itself included); -1: none.
  std::vector<int> before(n, -1);
  for (const Task& t : plan.tasks) {
    if (position[t.id] >= 0) before[t.id] = std::max(before[t.id], position[t.id]);
    for (int s : next[t.id]) before[s] = std::max(before[s], before[t.id]);
  }
  // Earliest compute position each task reaches (itself included); `computes`: none.
  std::vector<int> after(n, computes);
  for (size_t i = n; i-- > 0;) {
    if (position[i] >= 0) after[i] = position[i];
    for (int s : next[i]) after[i] = std::min(after[i], after[s]);
  }
  for (const Task& t : plan.tasks) {
    if (t.stream == StreamId::comm && after[t.id] > before[t.id] + 1) return true;
  }
  return false;
}

}  // namespace fob
