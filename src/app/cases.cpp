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

std::optional<std::string> given(const RunArgs& args, const char* key) {
  std::optional<std::string> value;
  for (const ConfigSetting& s : args.settings) {
    if (std::string(s.key->name) == key) value = s.value.text;
  }
  return value;
}

Config load_config(const RunArgs& args,
                   const std::function<std::string(const std::string& path)>& read) {
  Config config;
  if (!args.config_path.empty()) apply_yaml(config, read(args.config_path), args.config_path);
  // Command-line values override the file's; a value given replaces a list (a sweep).
  apply_settings(config, args.settings);
  validate_config(config);
  return config;
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

namespace {

// A strategy asked for must run somewhere: flash_qs in a sweep without attention is a mistake.
void check_strategies_apply(const std::vector<Config>& points) {
  for (const std::string& s : points.front().strategies) {
    const Strategy& strategy = *parse_strategy(s).strategy;
    bool somewhere = false;
    for (const Config& point : points) somewhere |= strategy_applies(strategy, point.workload);
    if (!somewhere) {
      throw InputError("strategies: '" + s + "' applies to workload " +
                       applicable_workloads(strategy) + " only, and this run has no such case");
    }
  }
}

}  // namespace

std::vector<Config> sweep_points(const Config& config) {
  std::vector<Config> points = expand_sweep(config);
  check_strategies_apply(points);
  for (const Config& point : points) validate_config(point);
  return points;
}

}  // namespace fob
