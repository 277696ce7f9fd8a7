// The verification oracle (docs/correctness.md): what a checked buffer must hold, computed
// from the global input tensors (inputs.h) with plain loops in double, independently of any
// strategy, backend or BLAS, so that a bug in those cannot hide by agreeing with itself. It is
// not a "reference" in the sense of the reference modes (compute_only, comm_only), which are
// timed cases; the bounds a result may deviate by are in tolerance.h.
#include <cstdint>
#include <vector>

#include "fob/plan.h"

#pragma once

namespace fob {

// What the checked buffer must hold, exact in double for the integer-valued inputs (attention's
// softmax aside, which tolerance.h bounds).
std::vector<double> expected_output(const Plan& plan, const OutputCheck& check, uint64_t seed);

}  // namespace fob
