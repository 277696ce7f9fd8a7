// The strategy specs tests run, derived from the strategy table (all_strategies()) so that a
// strategy added to it is tested everywhere without a list to edit: every strategy by its bare
// name and, where it takes a parameter, at each of a set of values; each at the workloads it
// applies to (strategy_applies).
#pragma once

#include <array>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {

// The plan tests' values: 1 spells the default out, 2 cuts even pieces, 3 uneven ones of an
// 8-row block (3, 3, 2), 4 is slicing's default and 8 a piece per row of that block.
inline constexpr std::array<int, 5> kPlanParams = {1, 2, 3, 4, 8};
// The executed cases (executor, simulator, gpu) cost far more each: an even and an uneven split.
inline constexpr std::array<int, 2> kRunParams = {2, 3};

// Every strategy in table order: its bare name, then "name:P" for each P in `params` when it
// takes a parameter.
inline std::vector<std::string> strategy_specs(std::span<const int> params) {
  std::vector<std::string> out;
  for (const Strategy* s : all_strategies()) {
    out.emplace_back(s->name);
    if (!s->param_name) continue;
    for (int p : params) out.push_back(std::string(s->name) + ":" + std::to_string(p));
  }
  return out;
}

// Those of strategy_specs(params) that apply to `workload`.
inline std::vector<std::string> strategy_specs_for(Workload workload, std::span<const int> params) {
  std::vector<std::string> out;
  for (const std::string& spec : strategy_specs(params)) {
    if (strategy_applies(*parse_strategy(spec).strategy, workload)) out.push_back(spec);
  }
  return out;
}

using WorkloadSpec = std::tuple<Workload, std::string>;

// Every (workload, spec) of the plan tests for which `applies(workload, strategy)` holds: a
// parametrised suite instantiates these, so a property that means nothing for a combination is
// not instantiated there rather than skipped.
template <class Predicate>
std::vector<WorkloadSpec> params_where(Predicate applies) {
  std::vector<WorkloadSpec> out;
  for (Workload w : all_workloads()) {
    for (const std::string& spec : strategy_specs_for(w, kPlanParams)) {
      if (applies(w, *parse_strategy(spec).strategy)) out.emplace_back(w, spec);
    }
  }
  return out;
}

}  // namespace fob
