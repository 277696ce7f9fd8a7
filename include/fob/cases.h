// What `run` and `sim` share: turning a config and the command line into cases.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fob/config.h"
#include "fob/config_keys.h"
#include "fob/workload.h"

namespace fob {

// Command-line values for `run`; each config key given overrides the config's value.
struct RunArgs {
  std::string config_path;
  std::vector<ConfigSetting> settings;  // config keys given, applied by load_config
  std::optional<std::string> resume;
  // A results file whose emulated link rate this run reuses (link_ratio.h, recorded_link).
  std::optional<std::string> link_from;
  std::optional<int> world;
  bool dry_run = false;
  bool force = false;
  std::string command_line;
};

// The current UTC time in strftime `format`.
std::string utc_now(const char* format);

// A new run's id (RunInfo::run_id): 16 hex digits from the system's random source.
std::string new_run_id();

// The value of config key `key` given on the command line (the last one), if any: the resume
// check and `sim` ask whether -o was given before there is a config.
std::optional<std::string> given(const RunArgs& args, const char* key);

// The config `run` and `sim` share: the YAML file (read with `read`, which `run` makes a
// broadcast from rank 0), then the command line over it, validated. InputError names the key.
Config load_config(const RunArgs& args,
                   const std::function<std::string(const std::string& path)>& read);

// The points of the config's sweep, each validated; InputError when a strategy asked for
// applies to none of them, or when the sweep makes more than kMaxSweepCases cases.
std::vector<Config> sweep_points(const Config& config);

// The bytes rank 0 holds for one case's per-iteration records: for each of `iters` iterations
// of each of `world` ranks, a step time, its timer's name and a start and an end per task
// (`tasks`), twice, as the gathered bytes and the case's arrays are held at once. Saturates at
// INT64_MAX rather than wrap.
int64_t timing_record_bytes(int64_t iters, int64_t world, int64_t tasks);

// Rank 0 holds the records of a group's cases until its last round: InputError naming --iters
// when those of the largest group (`group_tasks`: each case's task count, group by group) do
// not fit in `available` bytes of host memory (negative: unknown, nothing is checked).
void check_timing_memory(const std::vector<std::vector<int64_t>>& group_tasks, int iters, int world,
                         int64_t available);

// Reference modes first (they give the bounds), then the strategies as asked, each once. A
// strategy that does not apply to this point's workload (flash_qs outside attn) is left out;
// sweep_points() makes sure it applies somewhere in the sweep.
std::vector<CaseSpec> make_cases(const Config& c, int world);

}  // namespace fob
