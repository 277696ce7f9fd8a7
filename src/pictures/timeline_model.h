// What the timeline picture draws, computed from one iteration of one case: each task on its
// lane, the waits cross-stream dependencies forced, the idle gaps no dependency explains (a
// core taken by another rank where ranks share cores, a launch's delay), and the exposed
// communication.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fob/results.h"

namespace fob::timeline {

using Interval = std::pair<double, double>;

// One task of the chosen iteration, in plan order on its stream.
struct Placed {
  int row = 0;  // index into CaseResult::tasks
  double start = 0, end = 0;
};

// A gap a cross-stream dependency made on the waiting task's stream: from the previous task's
// end (or 0) until the dependency ended (or the task started, if sooner).
struct Wait {
  int rank = 0, stream = 0;
  double from = 0, to = 0;
  double dep_end = 0;
  int dep_stream = 0;
  std::string task_label, dep_label;
};

// A gap before a task that no pending dependency explains.
struct Idle {
  int rank = 0, stream = 0;
  double from = 0, to = 0;
  std::string task_label;
};

struct Model {
  Model(const CaseResult& c, int iter);

  const CaseResult& c;
  int iter;
  double step = 0;                             // the iteration's step time (slowest rank)
  double t_max = 0;                            // the time axis's end
  std::vector<std::vector<Placed>> lanes;      // [rank * kNumStreams + stream]
  std::vector<std::vector<Interval>> exposed;  // [rank]
  std::vector<Wait> waits;
  std::vector<Idle> idles;
  std::set<int> kinds;

 private:
  void place_tasks(int world, int tasks);
  void find_gaps();
};

// The iteration to show: `iter`, or the one whose step time is the median when -1. InputError
// when the case has no such iteration.
int pick_iteration(const CaseResult& c, int iter);

}  // namespace fob::timeline
