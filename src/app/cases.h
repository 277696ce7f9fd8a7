// What `run` and `sim` share: turning a config and the command line into cases.
#pragma once

#include <string>
#include <vector>

#include "commands.h"
#include "fob/config.h"
#include "fob/workload.h"

namespace fob {

// The current UTC time in strftime `format`.
std::string utc_now(const char* format);

// Command-line values override the config's; a value given replaces a list in the config.
void apply_args(Config& c, const RunArgs& a);

// Reference modes first (they give the bounds), then the strategies as asked, each once. A
// strategy that does not apply to this point's workload (flash_qs outside attn) is left out;
// check_strategies_apply() makes sure it applies somewhere in the sweep.
std::vector<CaseSpec> make_cases(const Config& c, int world);

// A strategy asked for must run somewhere: flash_qs in a sweep without attn is a mistake.
void check_strategies_apply(const std::vector<Config>& points);

}  // namespace fob
