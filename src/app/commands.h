// Subcommands of the fobench binary.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fob/cases.h"
#include "fob/config.h"
#include "fob/config_keys.h"
#include "fob/table.h"  // the --format choices

namespace fob {

int run_command(const RunArgs& args);

// What `run` refuses before anything is measured, checked in this process without MPI, as the
// ranks of a `world`-rank run would: the config file and the command line, the sweep's cases,
// and (but for --dry-run) the backend and its options. Exit 0, or 2 with run's message on stderr;
// nothing is allocated or written. What needs the ranks themselves (their memory, the results
// file) is left to run_command.
int check_run(const RunArgs& args, int world);

// The fobench command line: parses argv, runs the subcommand it names and returns the exit code.
// `run_body` is what `fobench run` calls: run_command, or in the tests a check without MPI
// (check_run), since MPI starts once per process.
int cli_main(int argc, char** argv,
             const std::function<int(const RunArgs&)>& run_body = run_command);

// A command's body, with the one mapping of errors to exit codes every command but `run` (whose
// ranks agree first) shares: InputError is exit 2, any other exception exit 3, each one line
// "fobench COMMAND: error: ..." on stderr.
int guarded(const char* command, const std::function<int()>& body);

struct ReportArgs {
  std::string file;
  std::string format = "md";
  std::string group_by;  // comma-separated case fields; empty: one table per shape
  // Pictures and traces, each written to its own file when its path is set.
  std::string timeline, breakdown, speedup, trace, tokens;
  // --case: the case of --timeline, --trace and --tokens (id, number or strategy)
  std::string case_id;
  std::string x_field;    // --x: the field --speedup draws along
  int iter = -1;          // --iter: the iteration of --timeline and --trace
  bool force = false;     // --force: replace pictures and traces that exist
  bool hardware = false;  // --hardware: the hardware's account of the run and each case
};

int report_command(const ReportArgs& args);

struct CompareArgs {
  // BASE NEW, or NEW alone with --history.
  std::vector<std::string> files;
  // More runs of each side's setting, pooled with it (--base, --new).
  std::vector<std::string> more_base, more_new;
  std::string history;    // --history DIR: NEW against the newest runs there
  int history_runs = 10;  // --history-runs
  double history_k = 3;   // --history-k: tolerance max(threshold, k sigma)
  double threshold_pct = 5;
  std::string metric = "T";                      // T | exposed_comm | busbw
  std::string format = "md";                     // parse_table_format
  std::string inconclusive_as = "inconclusive";  // parse_inconclusive_as
  std::string gate = "auto";                     // auto | parse_gate_mode
  // --across-transports: compare measured files whose transports differ (listed as a setting
  // difference) rather than refuse them.
  bool across_transports = false;
};

// The gate's exit status (gate_result): 0 PASS, 1 FAIL, 5 INCONCLUSIVE (or as
// --inconclusive-as says), 6 MISSING; 2 on bad input.
int compare_command(const CompareArgs& args);

struct SimArgs {
  RunArgs run;                        // the config, its overrides, -o and --force
  std::string machine;                // machine file
  std::string worlds;                 // "4,8,64"; empty: one node of the machine
  std::optional<int> ranks_per_node;  // overrides the machine's topology
  std::string format = "md";
  bool tune = false;  // --tune: every parameter of each strategy, the fastest per shape
};

int sim_command(const SimArgs& args);

struct CalibrateArgs {
  std::vector<std::string> files;
  std::string output;
  std::string name;
  bool force = false;
};

int calibrate_command(const CalibrateArgs& args);

// --list workloads | strategies: the registries, one "name: summary" line and indented
// "key: value" lines per entry.
int list_command(const std::string& what);

std::string version_text();

}  // namespace fob
