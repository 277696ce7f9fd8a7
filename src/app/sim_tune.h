// `fobench sim --tune`: every parameter of the strategies asked for, simulated side by side,
// and per shape and world the fastest choice and the runner-up.
#pragma once

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "fob/config.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/results.h"
#include "fob/table.h"
#include "fob/workload.h"

namespace fob {

// The parameters --tune tries for a strategy that takes one (slicing's C, flash's m): 1..16,
// every one the case takes (validate_case: at most the rows a rank owns).
inline constexpr int kTuneMaxParam = 16;

// The cases --tune simulates at one config point and world: the reference modes, baseline,
// then each strategy the config names (once, whatever parameter it was given) at every valid
// parameter in 1..kTuneMaxParam, ascending. Strategies that do not apply to the workload are
// left out, as make_cases does.
std::vector<CaseSpec> tune_cases(const Config& point, int world);

// One shape at one world: its fastest candidate (baseline and every overlapping case) and the
// fastest one of another strategy, ties going to the earlier (simpler) candidate.
// Candidates whose case id is in `ce` were priced on copy engines (the others on the config's
// transport): they compete with the others and are labelled "(ce)"; T_baseline is baseline's on
// the config's transport.
struct TuneRow {
  const Summary* best = nullptr;
  const Summary* runner_up = nullptr;  // nullptr when no other strategy ran
  bool best_ce = false, runner_up_ce = false;
  double t_baseline = 0, t_lb = 0;  // NaN where the reference is missing
  int candidates = 0;
};
std::vector<TuneRow> tune_rows(const std::vector<Summary>& all,
                               const std::set<std::string>& ce = {});

// The table of tune_rows(), headed by what was simulated and how, for any format.
TableDocument tune_document(const ResultFile& file, const std::vector<Summary>& all);

}  // namespace fob
