// fobench's command line: one binary, subcommands (docs/cli.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <type_traits>

#include "commands.h"
#include "fob/case_fields.h"
#include "fob/config.h"
#include "fob/config_keys.h"
#include "fob/types.h"

namespace {

// A command-line option that is not a config key.
template <typename T>
void optional_option(CLI::App* app, const std::string& flags, std::optional<T>& target,
                     const std::string& help) {
  if constexpr (std::is_integral_v<T>) {
    // Integers follow the config file's rule (fob::parse_integer): CLI11's own conversion
    // wraps 2^64 and -1 around and reads hex; the key is the option's long name.
    std::string key = flags.substr(flags.rfind("--") + 2);
    std::replace(key.begin(), key.end(), '-', '_');
    app->add_option_function<std::string>(
        flags, [&target, key](const std::string& v) { target = fob::parse_integer<T>(key, v); },
        help);
  } else {
    app->add_option_function<T>(
        flags, [&target](const T& v) { target = v; }, help);
  }
}

// The option of a config key (fob::config_keys()): each value given is kept in args.settings,
// applied over the config file's by load_config.
void config_option(CLI::App* app, const fob::ConfigKey& key, const std::string& help,
                   fob::RunArgs& args) {
  auto keep = [&args, &key](const fob::ConfigValue& value) {
    args.settings.push_back({&key, value});
  };
  if (key.kind == fob::ConfigKind::flag) {
    app->add_flag_function(
        key.flags,
        [keep](int64_t n) {
          keep({"", 0, n > 0});
        },
        help);
  } else if (key.kind == fob::ConfigKind::number) {
    // CLI11's conversion, which takes nan and inf for validate_config to name.
    app->add_option_function<double>(
        key.flags,
        [keep](const double& x) {
          keep({"", x, false});
        },
        help);
  } else {
    app->add_option_function<std::string>(
           key.flags,
           [keep, &key](const std::string& text) {
             const fob::ConfigValue value{text, 0, false};
             // An integer is checked as it is read, with the config file's rule; names wait for
             // load_config, which reports them with the config's other errors.
             fob::Config scratch;
             if (key.kind == fob::ConfigKind::integer) key.set(scratch, value);
             keep(value);
           },
           help)
        ->type_name(key.kind == fob::ConfigKind::integer ? "INT" : "TEXT");
  }
}

CLI::App* add_run(CLI::App& app, fob::RunArgs& run) {
  CLI::App* cmd = app.add_subcommand("run", "run a benchmark (under mpirun/srun)");
  cmd->add_option("-c,--config", run.config_path, "YAML config (bench_configs/*.yaml)");
  for (const fob::ConfigKey& key : fob::config_keys()) {
    config_option(cmd, key, fob::config_key_help(key), run);
  }
  optional_option(cmd, "--world", run.world, "world size for --dry-run without mpirun");
  cmd->add_flag("--dry-run", run.dry_run, "print each rank's plan and exit");
  cmd->add_flag("--force", run.force, "overwrite an existing results file");
  optional_option(cmd, "--resume", run.resume,
                  "continue an interrupted run in its NAME.h5.partial, skipping finished cases");
  optional_option(cmd, "--link-from", run.link_from,
                  "emulate the link rate FILE.h5 recorded (its link_gbps, or what its "
                  "--link-ratio chose) instead of choosing anew (cpu backend)");
  return cmd;
}

CLI::App* add_report(CLI::App& app, fob::ReportArgs& report) {
  CLI::App* cmd = app.add_subcommand("report", "print the speedup table of a results file");
  cmd->add_option("file", report.file, "results file (.h5 or .h5.partial)")->required();
  cmd->add_option("--format", report.format,
                  "table format: " + fob::table_format_choices() + " (default md)");
  cmd->add_option("--group-by", report.group_by,
                  "one table per value of these case fields (comma list of " +
                      fob::case_field_names([](const fob::CaseField&) { return true; }) +
                      "; e.g. seq or workload,world); default one per shape");
  cmd->add_option("--timeline", report.timeline,
                  "write a Gantt chart (SVG) of one iteration of one case");
  cmd->add_option("--case", report.case_id,
                  "the case of --timeline (default the first non-reference case), --trace "
                  "(default every case) and --tokens (default the first MoE case): its id "
                  "(0003), number (3) or strategy (flash, slicing:4)");
  cmd->add_option("--iter", report.iter,
                  "the iteration of --timeline (default the median one) and --trace "
                  "(default every one)");
  cmd->add_option("--breakdown", report.breakdown,
                  "write stacked bars (SVG): T_comp, slicing penalty, exposed comm vs T_lb");
  cmd->add_flag("--hardware", report.hardware,
                "print how the hardware ran the run and each case (NCCL's communicators, "
                "channels and transports, registration, the launch gate, clocks) instead of the "
                "speedup table");
  cmd->add_option("--speedup", report.speedup,
                  "write speedup vs baseline along the sweep's x-axis (SVG)");
  cmd->add_option(
      "--x", report.x_field,
      "the case field --speedup draws along (tokens, " +
          fob::case_field_names([](const fob::CaseField& f) { return f.axis_rank >= 0; }) +
          "; default: the one that tells the shapes apart on its own)");
  cmd->add_option("--trace", report.trace,
                  "write a Chrome trace (JSON) for Perfetto / chrome://tracing");
  cmd->add_option("--tokens", report.tokens,
                  "write the token matrix of an MoE case (SVG): source x destination rank, "
                  "tokens per expert, dropped choices");
  cmd->add_flag("--force", report.force,
                "overwrite existing --timeline, --trace, --breakdown, --speedup and --tokens "
                "files");
  return cmd;
}

CLI::App* add_compare(CLI::App& app, fob::CompareArgs& compare) {
  CLI::App* cmd = app.add_subcommand(
      "compare", "compare two results files case by case; exit 1 on a regression");
  cmd->add_option("files", compare.files,
                  "BASE NEW: the reference results file and the one to judge (NEW alone with "
                  "--history)")
      ->required();
  cmd->add_option("--base", compare.more_base,
                  "another run of BASE's setting, pooled with it (repeatable)");
  cmd->add_option("--new", compare.more_new,
                  "another run of NEW's setting, pooled with it (repeatable)");
  cmd->add_option("--history", compare.history,
                  "a directory of past runs: NEW is held against the newest of them, pooled, "
                  "with a tolerance of max(--threshold, k sigma of their spread)");
  cmd->add_option("--history-runs", compare.history_runs,
                  "how many of the newest runs --history takes (default 10)");
  cmd->add_option("--history-k", compare.history_k,
                  "k of --history's tolerance max(threshold, k sigma) (default 3)");
  cmd->add_option("--threshold", compare.threshold_pct,
                  "percent change past which a case regresses (default 5)");
  cmd->add_option("--metric", compare.metric, "T | exposed_comm | busbw (default T)");
  cmd->add_option("--format", compare.format,
                  "output format: " + fob::table_format_choices() + ", junit (default md)");
  cmd->add_option("--gate", compare.gate,
                  "what decides: auto (what both files' configs say; default), all (every "
                  "case's --metric) or interconnect (comm_only busbw decides; exposed_comm and T "
                  "shown beside)");
  cmd->add_flag("--across-transports", compare.across_transports,
                "compare measured files whose transports differ (nccl, ce, mpi) instead of "
                "refusing them; the difference is listed as a setting difference");
  cmd->add_option("--inconclusive-as", compare.inconclusive_as,
                  "what an INCONCLUSIVE gate exits with: inconclusive (5, default), pass (0) or "
                  "fail (1)");
  return cmd;
}

CLI::App* add_sim(CLI::App& app, fob::SimArgs& sim) {
  CLI::App* cmd = app.add_subcommand(
      "sim", "predict the step times of a config's plans on a machine file (no MPI, no GPU)");
  cmd->add_option("-c,--config", sim.run.config_path, "YAML config (bench_configs/*.yaml)");
  cmd->add_option("--machine", sim.machine, "machine file (bench_configs/machines/*.yaml)")
      ->required();
  cmd->add_option("--world", sim.worlds,
                  "world sizes, comma list, e.g. 8,16,64 (default: one node of the machine)");
  optional_option(cmd, "--ranks-per-node", sim.ranks_per_node,
                  "ranks per node, overriding the machine file's topology");
  for (const fob::ConfigKey& key : fob::config_keys()) {
    if (key.sim_help) config_option(cmd, key, key.sim_help, sim.run);
  }
  cmd->add_flag("--force", sim.run.force, "overwrite an existing results file");
  cmd->add_option("--format", sim.format,
                  "table format: " + fob::table_format_choices() + " (default md)");
  cmd->add_flag("--tune", sim.tune,
                "simulate every parameter 1..16 of each strategy and print, per shape and "
                "world, the fastest choice against baseline and T_lb, and the runner-up");
  return cmd;
}

CLI::App* add_calibrate(CLI::App& app, fob::CalibrateArgs& calibrate) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit a machine file to measured results files, printing the residuals");
  cmd->add_option("files", calibrate.files, "measured results files (.h5)")->required();
  cmd->add_option("-o,--output", calibrate.output, "machine file to write (.yaml)")->required();
  cmd->add_option("--name", calibrate.name, "the machine's name (default: -o's stem)");
  cmd->add_flag("--force", calibrate.force, "overwrite an existing machine file");
  return cmd;
}

// CLI11's messages repeat what was typed ("The following arguments were not expected: ...",
// "--list: X not in {...}"): each word of one with a control character or past kMaxQuoted
// characters is shown as quote_value shows a value, and a message of many words is cut, so
// that an argument neither reaches the terminal as an escape nor floods it.
std::string shown_message(const std::string& message) {
  constexpr size_t kMaxMessage = 8 * fob::kMaxQuoted;
  std::string out;
  size_t start = 0;
  while (start <= message.size() && out.size() <= kMaxMessage) {
    const size_t end = std::min(message.find(' ', start), message.size());
    const std::string word = message.substr(start, end - start);
    const bool plain =
        word.size() <= fob::kMaxQuoted && std::none_of(word.begin(), word.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        });
    out += (start ? " " : "") + (plain ? word : fob::quote_value(word));
    start = end + 1;
  }
  if (start <= message.size()) {
    out += " ... (" + std::to_string(message.size()) + " bytes in all)";
  }
  return out;
}

std::string failure_message(const CLI::App* /*app*/, const CLI::Error& e) {
  return shown_message(e.what()) + "\nRun with --help for more information.\n";
}

// The command line as given, recorded in results files.
std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
  return line;
}

}  // namespace

int fob::cli_main(int argc, char** argv, const std::function<int(const RunArgs&)>& run_body) {
  CLI::App app{"fobench: communication/computation overlap benchmarks for distributed LLM layers"};
  app.failure_message(failure_message);
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "backends built in and library versions");
  std::string list;
  app.add_option("--list", list, "print the table of workloads or strategies this build knows")
      ->check(CLI::IsMember({"workloads", "strategies"}));
  fob::RunArgs run;
  fob::ReportArgs report;
  fob::CompareArgs compare;
  fob::SimArgs sim;
  fob::CalibrateArgs calibrate;
  CLI::App* run_cmd = add_run(app, run);
  CLI::App* report_cmd = add_report(app, report);
  CLI::App* compare_cmd = add_compare(app, compare);
  CLI::App* sim_cmd = add_sim(app, sim);
  CLI::App* calibrate_cmd = add_calibrate(app, calibrate);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : fob::kExitBadInput;
  } catch (const fob::InputError& e) {
    std::fprintf(stderr, "fobench: error: %s\n", e.what());
    return fob::kExitBadInput;
  }
  if (show_version) {
    std::cout << fob::version_text();
    return 0;
  }
  if (!list.empty()) return fob::list_command(list);
  if (*run_cmd) {
    run.command_line = command_line(argc, argv);
    return run_body(run);
  }
  if (*report_cmd) return fob::report_command(report);
  if (*compare_cmd) return fob::compare_command(compare);
  if (*sim_cmd) {
    sim.run.command_line = command_line(argc, argv);
    return fob::sim_command(sim);
  }
  if (*calibrate_cmd) return fob::calibrate_command(calibrate);
  std::cout << app.help();
  return 0;
}
