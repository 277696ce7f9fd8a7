// The paper-style table, as Markdown, CSV, JSON or LaTeX (fob/table.h's writers).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "fob/metrics.h"
#include "fob/results.h"
#include "fob/table.h"

namespace fob {

// "seq" or "workload,world": case fields to group by. InputError naming the valid fields.
std::vector<std::string> parse_group_by(const std::string& text);

// Markdown and LaTeX print one table per group (default: per shape); CSV and JSON list every
// case, grouped rows adjacent.
void write_report(std::ostream& out, const ResultFile& file, TableFormat format,
                  const std::vector<std::string>& group_by = {});

}  // namespace fob
