// The paper-style table, as Markdown, CSV, JSON or LaTeX.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "fob/metrics.h"
#include "fob/results.h"

namespace fob {

enum class ReportFormat { md, csv, json, latex };
ReportFormat parse_report_format(const std::string& text);  // InputError on anything else

// "seq" or "workload,world": case fields to group by. InputError naming the valid fields.
std::vector<std::string> parse_group_by(const std::string& text);

// Markdown and LaTeX print one table per group (default: per shape); CSV and JSON list every
// case, grouped rows adjacent.
void write_report(std::ostream& out, const ResultFile& file, ReportFormat format,
                  const std::vector<std::string>& group_by = {});

}  // namespace fob
