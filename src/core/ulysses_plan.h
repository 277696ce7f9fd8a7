// The ulysses workload's plan (workload.cpp's make_plan hands it over): its buffers, inputs and
// checks around the strategy's two all-to-all halves and the attention between them.
#pragma once

#include "fob/plan_builder.h"
#include "fob/workload.h"

namespace fob {

void build_ulysses(PlanBuilder& b, const CaseSpec& spec, const Geometry& g);

}  // namespace fob
