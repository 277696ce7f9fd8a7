#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "fob/hardware.h"
#include "fob/metrics.h"
#include "fob/output_file.h"
#include "fob/pictures.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/table.h"
#include "fob/trace.h"
#include "fob/trust.h"

namespace fob {
namespace {

struct Output {
  const char* flag;
  const std::string& path;
};

// What tells two outputs apart: the file for one that exists, else its absolute, normalized
// path ("a.svg" and "./a.svg" are one file).
std::string identity(const std::string& path) {
  struct stat st = {};
  if (lstat(path.c_str(), &st) == 0) {
    return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : full.string();
}

// Every output is checked before the results file is read: none may be the results file, a
// link, another output or, without --force, a file that exists.
void check_outputs(const ReportArgs& args) {
  if (!args.x_field.empty() && args.speedup.empty()) {
    throw InputError("--x: '" + args.x_field +
                     "' chooses the x axis of --speedup, which is not "
                     "given (valid choices: add --speedup FILE.svg, or leave --x out)");
  }
  const Output outputs[] = {{"--timeline", args.timeline},
                            {"--trace", args.trace},
                            {"--breakdown", args.breakdown},
                            {"--speedup", args.speedup},
                            {"--tokens", args.tokens}};
  std::vector<std::pair<const Output*, std::string>> seen;
  for (const Output& out : outputs) {
    if (out.path.empty()) continue;
    check_output_path(out.flag, out.path, args.force, {args.file});
    const std::string id = identity(out.path);
    for (const auto& [other, other_id] : seen) {
      if (other_id == id) {
        throw InputError(std::string(other->flag) + " '" + other->path + "' and " + out.flag +
                         " '" + out.path + "' name the same file; give each output its own");
      }
    }
    seen.emplace_back(&out, id);
  }
}

// Renders in memory first, so bad input (an absent case) leaves no half-written file.
void write_file(const std::string& path, const std::function<void(std::ostream&)>& render) {
  std::ostringstream text;
  render(text);
  write_file_atomically(path, text.str());
  std::fprintf(stderr, "fobench report: wrote %s\n", path.c_str());
}

}  // namespace

int report_command(const ReportArgs& args) {
  return guarded("report", [&] {
    const TableFormat format = parse_table_format(args.format);
    const std::vector<std::string> group_by = parse_group_by(args.group_by);
    check_outputs(args);
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
      write_file(args.speedup, [&](std::ostream& o) { write_speedup_svg(o, file, args.x_field); });
    }
    if (!args.tokens.empty()) {
      write_file(args.tokens, [&](std::ostream& o) { write_tokens_svg(o, file, args.case_id); });
    }
    if (args.hardware) {
      write_table(std::cout, hardware_document(file), format);
      return kExitOk;
    }
    write_report(std::cout, file, format, group_by);
    const std::string noise = noise_warning(summarize(file));
    if (!noise.empty()) std::fprintf(stderr, "%s\n", noise.c_str());
    return kExitOk;
  });
}

}  // namespace fob
