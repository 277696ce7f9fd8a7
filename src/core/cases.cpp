// What `run` and `sim` share: turning a config and the command line into cases.
#include "fob/cases.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>
#include <random>
#include <set>

#include "fob/config_keys.h"
#include "fob/strategy.h"

namespace fob {

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof text, format, std::gmtime(&t));
  return text;
}

std::string new_run_id() {
  std::random_device random;
  const uint64_t id = (uint64_t{random()} << 32) ^ random();
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
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
  std::set<std::string> seen(specs.begin(), specs.end());  // a long list is not searched per item
  for (const std::string& s : c.strategies) {
    if (seen.insert(s).second) specs.push_back(s);
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
      throw InputError("strategies: " + quote_value(s) + " applies to workload " +
                       applicable_workloads(strategy) + " only, and this run has no such case");
    }
  }
}

}  // namespace

// Every rank expands the config it was sent, rather than rank 0 sending the points: each rank
// needs every point's cases to run them, the expansion is counted and bounded before anything is
// made (kMaxSweepCases), and it is a pure function of the config, so sending the points would
// cost each rank as much memory and more time than making them.
std::vector<Config> sweep_points(const Config& config) {
  std::vector<Config> points = expand_sweep(config);
  check_strategies_apply(points);
  // The MoE keys shape the points of a workload with experts; validate_config refused them
  // where the config has none. The other points of a mixed sweep run without them.
  for (Config& point : points) {
    if (!point.workload->has_experts) point.shape.moe = {};
  }
  for (const Config& point : points) validate_config(point);
  return points;
}

namespace {

int64_t times(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
}

int64_t plus(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

}  // namespace

int64_t timing_record_bytes(int64_t iters, int64_t world, int64_t tasks) {
  // A step time (a double), a timer's name (a std::string) and two doubles per task.
  const int64_t per_rank_iteration =
      plus(static_cast<int64_t>(sizeof(double) + sizeof(std::string)),
           times(tasks, 2 * static_cast<int64_t>(sizeof(double))));
  return times(2, times(times(iters, world), per_rank_iteration));
}

void check_timing_memory(const std::vector<std::vector<int64_t>>& group_tasks, int iters, int world,
                         int64_t available) {
  if (available < 0) return;
  int64_t needed = 0;
  for (const std::vector<int64_t>& group : group_tasks) {
    int64_t bytes = 0;
    for (const int64_t tasks : group) bytes = plus(bytes, timing_record_bytes(iters, world, tasks));
    needed = std::max(needed, bytes);
  }
  if (needed <= available) return;
  char text[320];
  std::snprintf(text, sizeof text,
                "memory: rank 0 needs %.2f GiB of host memory for the timings of %d iterations "
                "(-n/--iters) on %d rank(s) but %.2f GiB are free; lower --iters (at most %d)",
                static_cast<double>(needed) / 1073741824.0, iters, world,
                static_cast<double>(available) / 1073741824.0, kMaxIters);
  throw InputError(text);
}

}  // namespace fob
