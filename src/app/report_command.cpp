#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "fob/pictures.h"
#include "fob/report.h"
#include "fob/results.h"
#include "fob/trace.h"

namespace fob {
namespace {

// Renders in memory first, so bad input (an absent case) leaves no half-written file.
void write_file(const std::string& path, const std::function<void(std::ostream&)>& render) {
  std::ostringstream text;
  render(text);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text.str();
  out.close();
  if (!out) throw InputError("cannot write '" + path + "'");
  std::fprintf(stderr, "fobench report: wrote %s\n", path.c_str());
}

}  // namespace

int report_command(const ReportArgs& args) {
  return guarded("report", [&] {
    const ReportFormat format = parse_report_format(args.format);
    const std::vector<std::string> group_by = parse_group_by(args.group_by);
    const ResultFile file = read_results(args.file);
    // Every picture is rendered before any table is printed, so that a bad --case or --iter
    // is reported before anything else.
    if (!args.timeline.empty()) {
      TimelineOptions options{args.case_id, args.iter};
      write_file(args.timeline, [&](std::ostream& o) { write_timeline_svg(o, file, options); });
    }
    if (!args.trace.empty()) {
      write_file(args.trace,
                 [&](std::ostream& o) { write_trace_json(o, file, args.case_id, args.iter); });
    }
    if (!args.breakdown.empty()) {
      write_file(args.breakdown, [&](std::ostream& o) { write_breakdown_svg(o, file); });
    }
    if (!args.speedup.empty()) {
      write_file(args.speedup, [&](std::ostream& o) { write_speedup_svg(o, file); });
    }
    write_report(std::cout, file, format, group_by);
    return kExitOk;
  });
}

}  // namespace fob
