// `fobench sim`'s bounds: what a simulation builds, counted and estimated before anything is
// built, allocated or written, and refused past stated ceilings, as `run` refuses a sweep past
// kMaxSweepCases. The cost of a simulation is its plans, not its cases: a ring's plans grow with
// the world (flash:m has about 2 m N tasks a rank), so a few cases at a large world can cost
// more than a sweep of thousands at a small one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/config.h"
#include "fob/sim.h"
#include "fob/workload.h"

namespace fob {

// What one sim builds and prices, at most, in task units: a case builds one period of its ring
// (the machine's ranks per node, where the world is a multiple of it) and two ranks more,
// checked to be rotations, or every rank's plan where the ring has no period; a plan of S tasks
// and row runs (the runs its buffers are laid out in: slicing's C a rank) counts
// S (1 + S / kPlanTasksQuadratic) units, as building one costs more per task the larger it is
// (each new task's rows are looked up, and recorded, among the plan's earlier ones). On the
// 2-core host this was measured on, two cores did 1.8 million units a second of flash's rings
// (`sim --tune` at 2048 ranks: 49 million in 28 s) and some 0.4 million of attention's tiles,
// so the bound is half a minute to two minutes of work, with progress on stderr.
inline constexpr uint64_t kMaxSimWork = 50000000;
inline constexpr uint64_t kPlanTasksQuadratic = 16384;
// The tasks and row runs of one rank's plan, at most: some 7 s to build one at this size.
inline constexpr uint64_t kMaxSimPlanTasks = uint64_t{1} << 18;
// The most a simulated results file (-o) may hold: every stored rank's task records and times.
// They are held in memory about three times over while the file is written (the cases, the
// journal's bytes, the file's image).
inline constexpr uint64_t kMaxSimFileBytes = uint64_t{1} << 30;

// The cases `fobench sim` simulates, in order: at each world, each point's cases (tune_cases
// with `tune`, else make_cases). InputError naming the worlds, the points and the count when
// they are more than kMaxSweepCases, counted before any is made past that.
std::vector<CaseSpec> sim_cases(const std::vector<Config>& points, const std::vector<int>& worlds,
                                bool tune);

// The tasks of one rank's plan of `spec`, estimated without building it where the world is
// past 32 (up to 32: counted): the mean over the ranks of one period of the ring
// (plan_rotation_period; up to 16 of them, evenly spread), rank 0's where the plans are
// rotations of one. Counted on those plans of the same case at worlds that divide
// its own, from 16 up by factors of 2 while they stay small (the climb ends at a count past
// 2,048 once two are taken, and before one that could pass 65,536), then grown to the world as
// the power of the world through the two largest counts. Every built-in strategy's count goes
// as a power between -1 (attention's tiles, as heads / N) and 2 (ulysses' flash_stream, as
// N^2 m); a ring's as N (flash:m about 2 m N). Where the climb stopped short, as N^2.
uint64_t estimated_plan_tasks(const CaseSpec& spec);

// What the simulation of one case builds and keeps, as plans_to_simulate and simulate_case do.
struct SimCaseCost {
  uint64_t plan_tasks = 0;  // one rank's plan, the mean over the ranks (estimated_plan_tasks)
  uint64_t plan_runs = 0;   // the runs of rows its buffers are laid out in, estimated alike
  // The largest plan's tasks: a result holds every stored rank's records padded to it (the
  // plans' mean where they are rotations of one).
  uint64_t record_tasks = 0;
  uint64_t plans = 0;   // plans built
  uint64_t stored = 0;  // ranks whose task times the result holds
  // The largest plan's tasks and row runs (kMaxSimPlanTasks), and the task units of the case's
  // plans at their mean size (kMaxSimWork), saturating.
  uint64_t plan_size() const;
  uint64_t work() const;
};
SimCaseCost sim_case_cost(const CaseSpec& spec, const CostModel& cost);

// A whole simulation's estimate: each case's cost, and the totals checked against the bounds.
struct SimEstimate {
  std::vector<SimCaseCost> cases;
  uint64_t tasks = 0;       // every plan's tasks
  uint64_t work = 0;        // their task units
  uint64_t file_bytes = 0;  // the results file, where one is written
  uint64_t memory_bytes = 0;
};

// Estimates `specs` and throws InputError (the count, the ceiling and what to split) past
// kMaxSimPlanTasks, kMaxSimWork or (with `writes_file`) kMaxSimFileBytes, or when the memory
// estimate for `threads` cases at once is past `available` bytes (negative: not checked).
// `what` names the command in messages ("sim" or "sim --tune").
SimEstimate check_sim_bounds(const std::vector<CaseSpec>& specs, const CostModel& cost,
                             bool writes_file, unsigned threads, int64_t available,
                             const std::string& what);

}  // namespace fob
