// Synthetic results files for calibrate's tests: a case's real plans run by the simulator on a
// known cost model, its iteration repeated, as a measured file would hold it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fob/results.h"
#include "fob/sim.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {

constexpr int kMeasuredIters = 3;

// One simulated case, its iteration repeated kMeasuredIters times; with `outlier`, rank 0's
// tasks of a compute_only case take 1.5 times as long in iteration 1 (what medians must ignore).
inline CaseResult measured_case(Workload workload, const Shape& s, const std::string& strategy,
                                int world, const std::string& id, bool outlier,
                                const CostModel& machine, DType dtype = DType::fp32) {
  CaseSpec spec;
  spec.workload = workload;
  spec.shape = s;
  spec.world = world;
  spec.dtype = dtype;
  spec.strategy = parse_strategy(strategy);
  std::vector<Plan> plans;
  for (int r = 0; r < world; ++r) plans.push_back(make_plan(spec, r));
  CaseResult c = simulate_case(plans, machine, id);
  c.dtype = to_string(dtype);
  const std::vector<double> start = c.task_start, end = c.task_end, step = c.step_seconds;
  const size_t per_iter = start.size();
  c.iters = kMeasuredIters;
  c.task_start.clear();
  c.task_end.clear();
  c.step_seconds.clear();
  for (int it = 0; it < kMeasuredIters; ++it) {
    c.task_start.insert(c.task_start.end(), start.begin(), start.end());
    c.task_end.insert(c.task_end.end(), end.begin(), end.end());
    c.step_seconds.insert(c.step_seconds.end(), step.begin(), step.end());
  }
  if (outlier && strategy == "compute_only") {
    for (size_t i = 0; i < static_cast<size_t>(c.max_tasks); ++i) {
      const size_t j = per_iter + i;  // iteration 1, rank 0
      c.task_end[j] = c.task_start[j] + 1.5 * (c.task_end[j] - c.task_start[j]);
    }
  }
  return c;
}

// A file of the cpu backend over an emulated link, all ranks on host node7.
inline ResultFile measured_file(std::vector<CaseResult> cases, int world) {
  ResultFile f;
  f.run.created_utc = "2025-01-01T00:00:00Z";
  f.system.backend = "cpu";
  f.system.transport = "mpi";
  f.system.world_size = world;
  f.system.link_emulation = "emulated: 8 Gbit/s, 10 us latency";
  std::string hosts;
  for (int r = 0; r < world; ++r) hosts.append(r > 0 ? ",node7" : "node7");
  f.system.hostnames = hosts;
  f.cases = std::move(cases);
  return f;
}

}  // namespace fob
