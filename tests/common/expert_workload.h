// A workload with experts for the tests of the MoE keys: the shared layer geometry and nothing
// more, since those tests validate configs and make case keys but plan nothing.
#pragma once

#include "fob/workload.h"

namespace fob {

constexpr WorkloadDef expert_workload(const char* name) {
  return {.name = name,
          .summary = "a test's workload with experts",
          .geometry = layer_geometry,
          .has_experts = true};
}

}  // namespace fob
