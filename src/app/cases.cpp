// What `run` and `sim` share: turning a config and the command line into cases.
#include "cases.h"

#include <algorithm>
#include <ctime>

#include "fob/config_keys.h"
#include "fob/strategy.h"

namespace fob {

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof text, format, std::gmtime(&t));
  return text;
}

void apply_args(Config& c, const RunArgs& a) {
  apply_settings(c, a.settings);
}

std::vector<CaseSpec> make_cases(const Config& c, int world) {
  std::vector<std::string> specs = reference_strategies();
  for (const std::string& s : c.strategies) {
    if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
  }
  std::vector<CaseSpec> cases;
  for (const std::string& s : specs) {
    if (!strategy_applies(*parse_strategy(s).strategy, c.workload)) continue;
    CaseSpec spec;
    spec.workload = c.workload;
    spec.shape = c.shape;
    spec.shape.ffn = c.ffn();
    spec.dtype = c.dtype;
    spec.world = world;
    spec.strategy = parse_strategy(s);
    validate_case(spec);
    cases.push_back(spec);
  }
  return cases;
}

void check_strategies_apply(const std::vector<Config>& points) {
  for (const std::string& s : points.front().strategies) {
    const Strategy& strategy = *parse_strategy(s).strategy;
    bool somewhere = false;
    for (const Config& point : points) somewhere |= strategy_applies(strategy, point.workload);
    if (!somewhere) {
      throw InputError("strategies: '" + s + "' splits attention queries and applies to " +
                       "workload attn only; this run has no attn case (valid workload: attn)");
    }
  }
}

}  // namespace fob
