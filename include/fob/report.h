// The paper-style table, as Markdown, CSV or JSON.
#pragma once

#include <iosfwd>
#include <string>

#include "fob/metrics.h"
#include "fob/results.h"

namespace fob {

enum class ReportFormat { md, csv, json };
ReportFormat parse_report_format(const std::string& text);  // InputError on anything else

void write_report(std::ostream& out, const ResultFile& file, ReportFormat format);

}  // namespace fob
