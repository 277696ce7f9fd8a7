// The cases the executor and gpu tests run every workload at: each workload's check shape, with
// every strategy that applies to it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "fob/workload.h"
#include "strategy_specs.h"

namespace fob {

// gtest names a workload parameter by its name, not its table entry's address.
inline void PrintTo(Workload w, std::ostream* os) {
  *os << to_string(w);
}

inline const std::vector<Workload>& every_workload() {
  return all_workloads();
}

// Every strategy the workload takes, the reference modes included, at kRunParams where it takes a
// parameter.
inline std::vector<std::string> strategies_for(Workload w) {
  return strategy_specs_for(w, kRunParams);
}

// The workload's check shape (WorkloadDef::check_shape): for the built-in ones M = 144 tokens in
// sequences of 72, hidden = ffn = 144, 12 heads of 12, so that every extent a rank holds at
// world 1..4 divides by 12 and loopback inputs repeat every 12 rows at least.
inline CaseSpec test_case(Workload w, const std::string& strategy, int world, DType dtype,
                          bool loopback = false) {
  CaseSpec spec;
  spec.workload = w;
  spec.shape = w->check_shape;
  spec.dtype = dtype;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  spec.loopback = loopback;
  return spec;
}

}  // namespace fob
