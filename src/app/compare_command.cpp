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
#include <vector>

#include "commands.h"
#include "fob/compare.h"
#include "fob/compare_report.h"
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
int check_prediction(const CompareArgs& args, const ResultFile& base, const ResultFile& next,
                     TableFormat format) {
  const bool base_simulated = !base.system.simulated.empty();
  const CompareSide measured{"MEASURED", base_simulated ? args.next : args.base,
                             base_simulated ? next : base};
  const CompareSide simulated{"SIMULATED", base_simulated ? args.base : args.next,
                              base_simulated ? base : next};
  const PredictionCheck check = compare_predictions(measured.file, simulated.file);
  if (check.cases.empty()) {
    throw InputError("nothing to compare: no case of the measured file " + measured.path +
                     " is in the simulated file " + simulated.path +
                     " (same workload, strategy, shape, dtype and world)");
  }
  write_table(std::cout, prediction_document(check, measured, simulated), format);
  return kExitOk;
}

// Why a gate that compared nothing refuses: it would pass whatever NEW measured.
std::string nothing_to_compare(const ResultFile& base, const ResultFile& next,
                               const Comparison& comparison) {
  std::string why = "nothing to compare: BASE holds " + std::to_string(base.cases.size()) +
                    " case(s), NEW " + std::to_string(next.cases.size()) + ", and ";
  why += comparison.skipped > 0
             ? std::to_string(comparison.skipped) + " matched case(s) were skipped (" +
                   comparison.skipped_reason + ")"
             : "no case of one matches a case of the other (same workload, strategy, shape, "
               "dtype and world)";
  if (!comparison.not_comparable.empty()) {
    const NotComparable& first = comparison.not_comparable.front();
    why += "; " + std::to_string(comparison.not_comparable.size()) +
           " matched case(s) could not be compared (first, " + first.key.text() + ": " +
           first.reason + ")";
  }
  return why;
}

}  // namespace

int compare_command(const CompareArgs& args) {
  return guarded("compare", [&] {
    // Arguments first, so a bad option is reported without reading any file.
    const CompareMetric metric = parse_compare_metric(args.metric);
    // junit is the gate's own format, beside the table formats every command takes.
    const bool junit = args.format == "junit";
    if (!junit && !is_table_format(args.format)) {
      throw InputError("--format: unknown value '" + args.format +
                       "' (valid choices: " + table_format_choices() + ", junit)");
    }
    const TableFormat format = junit ? TableFormat::csv : parse_table_format(args.format);
    const InconclusiveAs inconclusive_as = parse_inconclusive_as(args.inconclusive_as);
    const std::string& gate = args.gate;
    if (gate != "auto" && parse_gate_mode(gate) == GateMode::interconnect && args.metric != "T") {
      throw InputError("--metric " + args.metric +
                       " judges every case by one figure (--gate all); --gate interconnect "
                       "judges comm_only busbw and exposed_comm itself: leave --metric out");
    }
    if (!std::isfinite(args.threshold_pct) || args.threshold_pct < 0) {
      throw InputError("--threshold " + fixed3(args.threshold_pct) +
                       " is not valid; give a percentage >= 0, e.g. 5");
    }
    const ResultFile base = read_results(args.base);
    const ResultFile next = read_results(args.next);
    if (const std::string why = incomparable_machines(base.system, next.system); !why.empty()) {
      throw InputError(why);
    }
    if (is_prediction_pair(base, next)) {
      if (junit) {
        throw InputError(
            "--format junit gives a gate's verdicts, and a measured file against a simulated one "
            "is a prediction check without one; choose " +
            table_format_choices());
      }
      return check_prediction(args, base, next, format);
    }
    std::string gate_note;
    const GateMode mode =
        gate == "auto" ? gate_of_files(base, next, &gate_note) : parse_gate_mode(gate);
    if (!gate_note.empty()) std::fprintf(stderr, "fobench compare: note: %s\n", gate_note.c_str());
    std::vector<Comparison> parts = gate_parts(base, next, mode, metric, args.threshold_pct);
    for (Comparison& part : parts) part.inconclusive_as = inconclusive_as;
    if (parts.front().changes.empty())
      throw InputError(nothing_to_compare(base, next, parts.front()));
    const CompareSide base_side{"BASE", args.base, base};
    const CompareSide new_side{"NEW", args.next, next};
    for (const SettingDifference& d : setting_differences(base.system, next.system)) {
      std::fprintf(stderr, "fobench compare: warning: the %s differs (BASE: %s; NEW: %s): %s\n",
                   d.setting.c_str(), d.base.c_str(), d.next.c_str(), d.consequence.c_str());
    }
    if (const std::string note = host_speed_note(parts.front()); !note.empty()) {
      std::fprintf(stderr, "fobench compare: warning: %s\n", note.c_str());
    }
    if (junit) {
      write_compare_junit(std::cout, parts, base_side, new_side);
    } else {
      write_table(std::cout, compare_document(parts, base_side, new_side, format), format);
    }
    std::cout.flush();
    if (junit || format != TableFormat::md) {
      std::fprintf(stderr, "%s\n", compare_result_line(parts).c_str());
    }
    return gate_result(parts, inconclusive_as).exit_code;
  });
}

}  // namespace fob
