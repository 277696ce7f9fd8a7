// `fobench compare BASE NEW`: prints the case-by-case comparison (compare_document in any table
// format) and exits with the gate's verdict (gate_result). Needs no MPI: it only reads two files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "fob/compare.h"
#include "fob/compare_history.h"
#include "fob/compare_report.h"
#include "fob/config.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/table.h"
#include "fob/types.h"

namespace fob {
namespace {

std::string fixed3(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// One file measured, the other from `fobench sim`: the prediction's error per case, no verdict.
int check_prediction(const std::string& base_path, const std::string& next_path,
                     const ResultFile& base, const ResultFile& next, TableFormat format) {
  const bool base_simulated = !base.system.simulated.empty();
  const CompareSide measured{"MEASURED", base_simulated ? next_path : base_path,
                             base_simulated ? next : base};
  const CompareSide simulated{"SIMULATED", base_simulated ? base_path : next_path,
                              base_simulated ? base : next};
  const PredictionCheck check = compare_predictions(measured.file, simulated.file);
  if (check.cases.empty()) {
    throw InputError("nothing to compare: no case of the measured file " +
                     quote_value(measured.path) + " is in the simulated file " +
                     quote_value(simulated.path) +
                     " (same workload, strategy, shape, dtype and world)");
  }
  write_table(std::cout, prediction_document(check, measured, simulated), format);
  return kExitOk;
}

// Why a gate that compared nothing refuses: it would pass whatever NEW measured. Cases that
// match but were skipped or could not be compared are counted as matched, never as unmatched.
std::string nothing_to_compare(const ResultFile& base, const ResultFile& next,
                               const Comparison& comparison) {
  std::string why = "nothing to compare: BASE holds " + std::to_string(base.cases.size()) +
                    " case(s), NEW " + std::to_string(next.cases.size()) + ", and ";
  const size_t matched = comparison.skipped + comparison.not_comparable.size();
  if (matched == 0) {
    return why +
           "no case of one matches a case of the other (same workload, strategy, shape, dtype "
           "and world)";
  }
  why += std::to_string(matched) +
         " case(s) of one match a case of the other, but none could "
         "be compared:";
  if (comparison.skipped > 0) {
    why += " " + std::to_string(comparison.skipped) + " were skipped (" +
           comparison.skipped_reason + ")";
  }
  if (!comparison.not_comparable.empty()) {
    const NotComparable& first = comparison.not_comparable.front();
    why += std::string(comparison.skipped > 0 ? ";" : "") + " " +
           std::to_string(comparison.not_comparable.size()) +
           " lack what a comparison needs (first, " + first.key.text() + ": " + first.reason + ")";
  }
  return why;
}

// Two simulations have no gate: the simulator prices one iteration of each case, exactly, so
// neither file has a spread to judge a change by. Said before any case is matched, rather than
// as each case's lack of iterations.
void refuse_two_simulations(const ResultFile& base, const ResultFile& next) {
  if (base.system.simulated.empty() || next.system.simulated.empty()) return;
  throw InputError(
      "BASE and NEW are both simulated (fobench sim): a simulation prices one iteration of each "
      "case, exactly, so there is no spread to judge a change by and no verdict between two of "
      "them; compare a measured file with a simulated one (the prediction's error per case), or "
      "read each with `fobench report`");
}

// One side of the comparison: its runs, pooled where there are several.
struct Side {
  std::vector<std::string> paths;
  std::vector<ResultFile> runs;
  ResultFile pooled;
  std::string label;  // the path, or the first with how many more were pooled
};

Side read_side(std::vector<std::string> paths) {
  Side side;
  side.paths = std::move(paths);
  for (const std::string& p : side.paths) side.runs.push_back(read_results(p));
  side.pooled = side.runs.size() == 1 ? side.runs.front() : pool_results(side.runs, side.paths);
  side.label = side.paths.front();
  if (side.paths.size() > 1) {
    side.label += " and " + std::to_string(side.paths.size() - 1) + " more run(s), pooled";
  }
  return side;
}

// BASE's and NEW's files from the arguments: BASE NEW with --base and --new pooled in, or NEW
// (with --new) against --history's newest runs.
std::pair<std::vector<std::string>, std::vector<std::string>> side_paths(const CompareArgs& a) {
  std::vector<std::string> base, next;
  if (!a.history.empty()) {
    if (a.files.size() != 1 || !a.more_base.empty()) {
      throw InputError("--history " + quote_value(a.history) + " is BASE: give NEW alone (got " +
                       std::to_string(a.files.size()) + " file(s)" +
                       (a.more_base.empty() ? "" : " and --base") + ")");
    }
    if (a.history_runs < 2) {
      throw InputError("--history-runs " + std::to_string(a.history_runs) +
                       " is too few; a history needs at least 2 runs (default 10)");
    }
    if (!std::isfinite(a.history_k) || !(a.history_k > 0)) {
      throw InputError("--history-k " + fixed3(a.history_k) +
                       " is not valid; give a number > 0 (default 3)");
    }
    base = history_files(a.history, a.history_runs);
    next = {a.files.front()};
  } else {
    if (a.files.size() != 2) {
      throw InputError("compare takes BASE and NEW (got " + std::to_string(a.files.size()) +
                       " file(s)); with --history DIR, NEW alone");
    }
    base = {a.files[0]};
    next = {a.files[1]};
  }
  base.insert(base.end(), a.more_base.begin(), a.more_base.end());
  next.insert(next.end(), a.more_new.begin(), a.more_new.end());
  return {base, next};
}

// What compare writes: junit (the gate's own format, beside the table formats every command
// takes) or a table format; checked before any file is read.
struct CompareOutput {
  bool junit = false;
  TableFormat format = nullptr;  // nullptr for junit
};

CompareOutput compare_output(const std::string& text) {
  if (text == "junit") return {true, nullptr};
  if (!is_table_format(text)) {
    throw InputError("--format: unknown value " + quote_value(text) +
                     " (valid choices: " + table_format_choices() + ", junit)");
  }
  return {false, parse_table_format(text)};
}

void check_compare_options(const CompareArgs& args) {
  if (args.gate != "auto" && parse_gate_mode(args.gate) == GateMode::interconnect &&
      args.metric != "T") {
    throw InputError("--metric " + quote_value(args.metric) +
                     " judges every case by one figure (--gate all); --gate interconnect "
                     "judges comm_only busbw and exposed_comm itself: leave --metric out");
  }
  if (!std::isfinite(args.threshold_pct) || args.threshold_pct < 0) {
    throw InputError("--threshold " + fixed3(args.threshold_pct) +
                     " is not valid; give a percentage >= 0, e.g. 5");
  }
}

// --history widens each part's tolerance to k sigma of the past runs where that is wider.
void apply_history(std::vector<Comparison>& parts, const CompareArgs& args, const Side& base,
                   InconclusiveAs inconclusive_as) {
  for (Comparison& part : parts) {
    part.inconclusive_as = inconclusive_as;
    if (args.history.empty()) continue;
    const int widened = apply_history_tolerance(part, base.runs, args.history_k);
    std::fprintf(stderr,
                 "fobench compare: note: %s: %d case(s) judged against k sigma = %g sigma of "
                 "the %zu runs of --history, wider than --threshold\n",
                 to_string(part.metric), widened, args.history_k, base.runs.size());
  }
}

void warn_of_differences(const ResultFile& base, const ResultFile& next, const Comparison& first) {
  for (const SettingDifference& d : setting_differences(base.system, next.system)) {
    std::fprintf(stderr, "fobench compare: warning: the %s differs (BASE: %s; NEW: %s): %s\n",
                 d.setting.c_str(), d.base.c_str(), d.next.c_str(), d.consequence.c_str());
  }
  if (const std::string note = host_speed_note(first); !note.empty()) {
    std::fprintf(stderr, "fobench compare: warning: %s\n", note.c_str());
  }
}

// The verdict goes to stderr too unless the output is a document people read, which ends with it.
void write_compare(const CompareOutput& output, const std::vector<Comparison>& parts,
                   const CompareSide& base, const CompareSide& next) {
  if (output.junit) {
    write_compare_junit(std::cout, parts, base, next);
  } else {
    write_table(std::cout, compare_document(parts, base, next, output.format), output.format);
  }
  std::cout.flush();
  if (output.junit || output.format->layout != TableLayout::people) {
    std::fprintf(stderr, "%s\n", compare_result_line(parts).c_str());
  }
}

}  // namespace

int compare_command(const CompareArgs& args) {
  return guarded("compare", [&] {
    // Arguments first, so a bad option is reported without reading any file.
    const CompareMetric metric = parse_compare_metric(args.metric);
    const CompareOutput output = compare_output(args.format);
    const InconclusiveAs inconclusive_as = parse_inconclusive_as(args.inconclusive_as);
    check_compare_options(args);
    const auto [base_paths, new_paths] = side_paths(args);
    const Side base_read = read_side(base_paths), new_read = read_side(new_paths);
    const ResultFile& base = base_read.pooled;
    const ResultFile& next = new_read.pooled;
    if (const std::string why = incomparable_machines(base.system, next.system); !why.empty()) {
      throw InputError(why);
    }
    if (const std::string why = incomparable_transports(base.system, next.system);
        !why.empty() && !args.across_transports) {
      throw InputError(why + "; pass --across-transports to compare them anyway");
    }
    if (is_prediction_pair(base, next)) {
      if (output.junit) {
        throw InputError(
            "--format junit gives a gate's verdicts, and a measured file against a simulated one "
            "is a prediction check without one; choose " +
            table_format_choices());
      }
      return check_prediction(base_read.label, new_read.label, base, next, output.format);
    }
    refuse_two_simulations(base, next);
    std::string gate_note;
    const GateMode mode =
        args.gate == "auto" ? gate_of_files(base, next, &gate_note) : parse_gate_mode(args.gate);
    if (!gate_note.empty()) std::fprintf(stderr, "fobench compare: note: %s\n", gate_note.c_str());
    std::vector<Comparison> parts = gate_parts(base, next, mode, metric, args.threshold_pct);
    apply_history(parts, args, base_read, inconclusive_as);
    if (parts.front().changes.empty())
      throw InputError(nothing_to_compare(base, next, parts.front()));
    warn_of_differences(base, next, parts.front());
    write_compare(output, parts, {"BASE", base_read.label, base}, {"NEW", new_read.label, next});
    return gate_result(parts, inconclusive_as).exit_code;
  });
}

}  // namespace fob
