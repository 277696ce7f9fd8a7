#include "timeline_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "fob/plan.h"
#include "fob/types.h"

namespace fob::timeline {
namespace {

// Sorted, disjoint intervals covering the same time as `in`.
std::vector<Interval> merge(std::vector<Interval> in) {
  std::sort(in.begin(), in.end());
  std::vector<Interval> out;
  for (const Interval& iv : in) {
    if (!(iv.second > iv.first)) continue;
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

// Time in `a` not in `b`; both sorted and disjoint.
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  for (Interval iv : a) {
    for (const Interval& cut : b) {
      if (cut.second <= iv.first || cut.first >= iv.second) continue;
      if (cut.first > iv.first) out.emplace_back(iv.first, cut.first);
      iv.first = std::max(iv.first, cut.second);
      if (iv.first >= iv.second) break;
    }
    if (iv.second > iv.first) out.push_back(iv);
  }
  return out;
}

std::string label_of(const TaskRecord& t) {
  return t.label.empty() ? "task " + std::to_string(t.task) : std::string(t.label);
}

}  // namespace

int pick_iteration(const CaseResult& c, int iter) {
  if (c.iters <= 0) throw InputError("case " + c.id + " has no measured iterations");
  if (iter >= c.iters || iter < -1) {
    throw InputError("--iter: no iteration " + std::to_string(iter) + " in case " + c.id +
                     " (valid choices: 0.." + std::to_string(c.iters - 1) + ")");
  }
  if (iter >= 0) return iter;
  // The median step (the lower middle for an even count): a typical step, not an outlier.
  std::vector<std::pair<double, int>> steps;
  for (int i = 0; i < c.iters; ++i) {
    const double s = c.step(i);
    if (std::isfinite(s)) steps.emplace_back(s, i);
  }
  if (steps.empty()) return 0;
  std::sort(steps.begin(), steps.end());
  return steps[(steps.size() - 1) / 2].second;
}

Model::Model(const CaseResult& result, int iteration) : c(result), iter(iteration) {
  const int world = std::max(c.ranks(), 0);  // the ranks the case stores
  const int tasks = std::max(c.max_tasks, 0);
  const size_t base = c.timing_index(iter, 0, 0);
  if (c.tasks.size() < static_cast<size_t>(world) * tasks ||
      c.task_start.size() < base + static_cast<size_t>(world) * tasks ||
      c.task_end.size() < c.task_start.size()) {
    throw InputError("case " + c.id + ": task arrays are shorter than world × tasks");
  }
  step = c.step(iter);
  place_tasks(world, tasks);
  find_gaps();
  for (int r = 0; r < world; ++r) {
    std::vector<Interval> comp, comm;
    for (const Placed& p : lanes[static_cast<size_t>(r) * kNumStreams]) {
      comp.emplace_back(p.start, p.end);
    }
    for (const Placed& p : lanes[static_cast<size_t>(r) * kNumStreams + 1]) {
      comm.emplace_back(p.start, p.end);
    }
    exposed.push_back(subtract(merge(comm), merge(comp)));
  }
}

void Model::place_tasks(int world, int tasks) {
  const size_t base = c.timing_index(iter, 0, 0);
  lanes.assign(static_cast<size_t>(world) * kNumStreams, {});
  for (int r = 0; r < world; ++r) {
    for (int t = 0; t < tasks; ++t) {
      const int row = r * tasks + t;
      const TaskRecord& rec = c.tasks[static_cast<size_t>(row)];
      const double start = c.task_start[base + static_cast<size_t>(row)];
      const double end = c.task_end[base + static_cast<size_t>(row)];
      if (rec.task < 0 || !std::isfinite(start) || !std::isfinite(end)) continue;
      if (rec.stream < 0 || rec.stream >= kNumStreams) continue;
      lanes[static_cast<size_t>(r) * kNumStreams + rec.stream].push_back({row, start, end});
      kinds.insert(rec.kind);
      t_max = std::max(t_max, end);
    }
  }
  if (std::isfinite(step)) t_max = std::max(t_max, step);
  if (!(t_max > 0)) t_max = 1e-3;  // nothing timed: an empty axis of 1 ms
  t_max *= 1.02;                   // room for the last task's outline
  // Plan order on a stream is task-id order: the order the executor launches them in.
  auto by_id = [&](const Placed& a, const Placed& b) {
    return c.tasks[static_cast<size_t>(a.row)].task < c.tasks[static_cast<size_t>(b.row)].task;
  };
  for (auto& lane : lanes) std::sort(lane.begin(), lane.end(), by_id);
}

// A cross-stream dependency made the stream wait when it ended after the stream's previous
// task: then the dependency, not the stream's order, decided when the task could start. Of
// several, the one that ended last is the one that held the task. What is left of the gap
// after the dependency ended, and every gap no dependency held, is idle time of another cause.
void Model::find_gaps() {
  std::map<std::pair<int, int>, int> row_of;  // (rank, task id) -> row
  std::map<int, double> previous_end;         // row -> end of the previous task on its stream
  std::map<int, Placed> placed;
  for (const auto& lane : lanes) {
    double prev = 0;
    for (const Placed& p : lane) {
      const TaskRecord& rec = c.tasks[static_cast<size_t>(p.row)];
      row_of[{rec.rank, rec.task}] = p.row;
      previous_end[p.row] = prev;
      placed[p.row] = p;
      prev = p.end;
    }
  }
  std::map<int, int> holder;  // row -> row of the dependency that ended last
  for (const DepRecord& d : c.deps) {
    auto t = row_of.find({d.rank, d.task});
    auto on = row_of.find({d.rank, d.on});
    if (t == row_of.end() || on == row_of.end()) continue;
    if (c.tasks[static_cast<size_t>(t->second)].stream ==
        c.tasks[static_cast<size_t>(on->second)].stream) {
      continue;
    }
    if (placed[on->second].end <= previous_end[t->second]) continue;
    auto h = holder.find(t->second);
    if (h == holder.end() || placed[on->second].end > placed[h->second].end) {
      holder[t->second] = on->second;
    }
  }
  for (const auto& [row, p] : placed) {
    const TaskRecord& task = c.tasks[static_cast<size_t>(row)];
    const double from = std::max(previous_end[row], 0.0);
    double idle_from = from;
    auto h = holder.find(row);
    if (h != holder.end()) {
      const TaskRecord& dep = c.tasks[static_cast<size_t>(h->second)];
      const double dep_end = placed[h->second].end;
      const double to = std::min(p.start, dep_end);
      if (to > from) {
        waits.push_back(
            {task.rank, task.stream, from, to, dep_end, dep.stream, label_of(task), label_of(dep)});
      }
      idle_from = std::max(from, dep_end);
    }
    if (p.start > idle_from)
      idles.push_back({task.rank, task.stream, idle_from, p.start, label_of(task)});
  }
}

}  // namespace fob::timeline
