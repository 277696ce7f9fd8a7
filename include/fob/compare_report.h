// `fobench compare`'s output (src/report/compare_table.cpp): the comparison compare.h computes, as
// the one table model (table.h) prints it, and the verdict in words.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "fob/compare.h"
#include "fob/table.h"

namespace fob {

// One of the two files compared, as its table names it.
struct CompareSide {
  std::string name;  // "BASE" or "NEW"
  std::string path;
  const ResultFile& file;
};

// The comparison as a document for `format` (src/report/compare_table.cpp): Markdown and LaTeX get
// the compared cases rounded, with the unmatched cases and the verdict in words; CSV and JSON
// every case, compared or not, at full precision, with the files' facts.
TableDocument compare_document(const Comparison& comparison, const CompareSide& base,
                               const CompareSide& next, TableFormat format);
// A gate of several parts (gate_parts): a table per part, titled with its figure and role; the
// facts and the verdict over all of them.
TableDocument compare_document(const std::vector<Comparison>& parts, const CompareSide& base,
                               const CompareSide& next, TableFormat format);

// "Result: PASS: ...", "Result: FAIL: ...", "Result: MISSING: ..." or "Result: INCONCLUSIVE:
// ..." (gate_result with the comparison's --inconclusive-as), the counts, and the inconclusive
// cases with what would narrow them.
std::string compare_result_line(const Comparison& comparison);
std::string compare_result_line(const std::vector<Comparison>& parts);

// The comparison as JUnit XML for CI (src/report/compare_junit.cpp): a test case per compared case
// (a regression a failure, an inconclusive one skipped or as --inconclusive-as says), per case
// NEW lacks (a failure) and per case not comparable (an error); the gate's verdict, reason and
// exit code as the suite's properties. Every string from the files is escaped.
void write_compare_junit(std::ostream& out, const std::vector<Comparison>& parts,
                         const CompareSide& base, const CompareSide& next);

// Predicted against measured (one file from `fobench sim`, the other measured): per case both
// step times and the prediction's error, with the machine file's name, the mean and largest
// |error| in the prose and facts.
TableDocument prediction_document(const PredictionCheck& check, const CompareSide& measured,
                                  const CompareSide& simulated);

}  // namespace fob
