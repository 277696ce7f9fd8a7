// append_round()'s part for the timer of each iteration (case_timers.cpp).
#pragma once

#include "fob/results.h"

namespace fob {

// Appends `round`'s timers to `result` (before result.iters counts the round); logic_error when
// they do not match the round, or the case recorded timers before and this round does not.
void append_round_timers(CaseResult& result, const RoundTimes& round);

}  // namespace fob
