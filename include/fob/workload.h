// Workloads: which buffers exist, which inputs fill them, and how a strategy's halves compose.
#pragma once

#include <string>

#include "fob/plan.h"
#include "fob/strategy.h"

namespace fob {

struct CaseSpec {
  Workload workload = Workload::mlp;
  Shape shape;
  DType dtype = DType::fp32;
  int world = 1;
  StrategySpec strategy;
};

// Throws InputError when the shape does not divide by the world size or the strategy's
// parameter, naming the key, the value and what would be valid.
void validate_case(const CaseSpec& spec);

Plan make_plan(const CaseSpec& spec, int rank);

}  // namespace fob
