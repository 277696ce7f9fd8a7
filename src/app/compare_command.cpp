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
    Comparison comparison = compare_results(base, next, metric, args.threshold_pct);
    comparison.inconclusive_as = inconclusive_as;
    if (comparison.changes.empty()) {
      // A gate that compared nothing would pass whatever NEW measured.
      std::string why = "nothing to compare: BASE holds " + std::to_string(base.cases.size()) +
                        " case(s), NEW " + std::to_string(next.cases.size()) + ", and ";
      why += comparison.skipped > 0
                 ? std::to_string(comparison.skipped) + " matched case(s) were skipped (" +
                       comparison.skipped_reason + ")"
                 : "no case of one matches a case of the other (same workload, strategy, "
                   "shape, dtype and world)";
      if (!comparison.not_comparable.empty()) {
        const NotComparable& first = comparison.not_comparable.front();
        why += "; " + std::to_string(comparison.not_comparable.size()) +
               " matched case(s) could not be compared (first, " + first.key.text() + ": " +
               first.reason + ")";
      }
      throw InputError(why);
    }
    const CompareSide base_side{"BASE", args.base, base};
    const CompareSide new_side{"NEW", args.next, next};
    for (const SettingDifference& d : setting_differences(base.system, next.system)) {
      std::fprintf(stderr, "fobench compare: warning: the %s differs (BASE: %s; NEW: %s): %s\n",
                   d.setting.c_str(), d.base.c_str(), d.next.c_str(), d.consequence.c_str());
    }
    if (junit) {
      write_compare_junit(std::cout, comparison, base_side, new_side);
    } else {
      write_table(std::cout, compare_document(comparison, base_side, new_side, format), format);
    }
    std::cout.flush();
    if (junit || format != TableFormat::md) {
      std::fprintf(stderr, "%s\n", compare_result_line(comparison).c_str());
    }
    return gate_result(comparison, inconclusive_as).exit_code;
  });
}

}  // namespace fob
