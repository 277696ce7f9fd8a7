#include "fob/device_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// "0-2,5": ascending ranks as runs.
std::string rank_runs(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(ranks[i]));
    if (j > i) out.append("-").append(std::to_string(ranks[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string ranks_across_nodes(const std::vector<int>& node_of_rank) {
  std::vector<int> nodes;  // in order of their first rank
  std::map<int, std::vector<int>> ranks;
  for (int r = 0; r < static_cast<int>(node_of_rank.size()); ++r) {
    auto& on = ranks[node_of_rank[r]];
    if (on.empty()) nodes.push_back(node_of_rank[r]);
    on.push_back(r);
  }
  if (nodes.size() <= 1) return "";
  std::string groups;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) groups.append(i + 1 == nodes.size() ? " and " : "; ");
    groups.append(rank_runs(ranks[nodes[i]]));
  }
  return "the ranks run on " + std::to_string(nodes.size()) + " nodes (ranks " + groups + ")";
}

int64_t device_bytes_needed(const Plan& plan, int64_t workspace_bytes) {
  return plan.buffer_bytes() + row_map_bytes(plan) + workspace_bytes;
}

int64_t row_map_bytes(const Plan& plan) {
  int64_t entries = 0;
  for (const RowMap& map : plan.row_maps) {
    entries += static_cast<int64_t>(map.src.size() + map.weight.size());
  }
  return entries * 8;
}

RowMapImage row_map_image(const Plan& plan) {
  static_assert(sizeof(int64_t) == 8 && sizeof(double) == 8, "8-byte entries, as row_map_bytes");
  RowMapImage image;
  image.bytes.resize(static_cast<size_t>(row_map_bytes(plan)));
  size_t at = 0;
  auto put = [&](const auto& values) {
    const size_t bytes = values.size() * 8;
    if (bytes > 0) std::memcpy(image.bytes.data() + at, values.data(), bytes);
    at += bytes;
  };
  for (const RowMap& map : plan.row_maps) {
    image.src.push_back(static_cast<int64_t>(at));
    put(map.src);
  }
  for (const RowMap& map : plan.row_maps) {
    image.weight.push_back(map.weight.empty() ? -1 : static_cast<int64_t>(at));
    put(map.weight);
  }
  return image;
}

int64_t stage_elements(const Plan& plan) {
  int64_t most = 0;
  for (const Task& t : plan.tasks) {
    if (t.kind != TaskKind::collective) continue;
    const int64_t block = t.c.rows * plan.buffers[t.c.buffer].cols;
    if (t.op == CollectiveOp::reduce_scatter) {
      if (t.src_stride_rows != t.c.rows) most = std::max(most, plan.world * block);
      if (plan.input_period > 0) most = std::max(most, block);
    }
  }
  return most;
}

bool graph_capture_eligible(const Plan& plan, const std::string& transport, std::string* why) {
  if (transport != "nccl") {
    if (why) {
      *why = transport == "ce"
                 ? "transport ce numbers its flags per iteration, which a replayed "
                   "graph would repeat"
                 : "transport " + transport + " stages transfers through a host thread";
    }
    return false;
  }
  if (plan.tasks.empty()) {
    if (why) *why = "the plan has no tasks";
    return false;
  }
  return true;
}

namespace {

// Plan order is a topological order (a task depends only on earlier tasks) and each stream
// runs in order, so the compute tasks that reach a comm task are a prefix of the compute
// stream, and those it reaches a suffix. A comm task can run beside exactly the compute tasks
// between the two: for each comm task, the compute positions it may overlap, [first, last]
// (first > last: none), and each compute task's position.
struct ComputeWindows {
  std::vector<int> position;              // a compute task's place on its stream, else -1
  std::vector<std::pair<int, int>> comm;  // per comm task id; {0, -1} elsewhere
  int computes = 0;
};

ComputeWindows compute_windows(const Plan& plan) {
  const size_t n = plan.tasks.size();
  ComputeWindows w;
  w.position.assign(n, -1);
  w.comm.assign(n, {0, -1});
  for (const Task& t : plan.tasks) {
    if (t.stream == StreamId::compute) w.position[t.id] = w.computes++;
  }
  if (w.computes == 0) return w;
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
    if (w.position[t.id] >= 0) before[t.id] = std::max(before[t.id], w.position[t.id]);
    for (int s : next[t.id]) before[s] = std::max(before[s], before[t.id]);
  }
  // Earliest compute position each task reaches (itself included); `computes`: none.
  std::vector<int> after(n, w.computes);
  for (size_t i = n; i-- > 0;) {
    if (w.position[i] >= 0) after[i] = w.position[i];
    for (int s : next[i]) after[i] = std::min(after[i], after[s]);
  }
  for (const Task& t : plan.tasks) {
    if (t.stream == StreamId::comm) w.comm[t.id] = {before[t.id] + 1, after[t.id] - 1};
  }
  return w;
}

}  // namespace

bool plan_overlaps(const Plan& plan) {
  const ComputeWindows w = compute_windows(plan);
  for (const auto& [first, last] : w.comm) {
    if (first <= last) return true;
  }
  return false;
}

std::vector<char> tasks_beside_transfers(const Plan& plan) {
  const ComputeWindows w = compute_windows(plan);
  // Marks the union of the comm tasks' windows over compute positions (a difference array).
  std::vector<int> opened(static_cast<size_t>(w.computes) + 1, 0);
  for (const auto& [first, last] : w.comm) {
    if (first > last) continue;
    ++opened[first];
    --opened[last + 1];
  }
  std::vector<char> covered(static_cast<size_t>(w.computes), 0);
  for (int p = 0, open = 0; p < w.computes; ++p) {
    open += opened[p];
    covered[p] = open > 0;
  }
  std::vector<char> out(plan.tasks.size(), 0);
  for (const Task& t : plan.tasks) {
    if (t.stream == StreamId::compute) out[t.id] = covered[w.position[t.id]];
  }
  return out;
}

}  // namespace fob
