#include <cstdio>
#include <iostream>

#include "commands.h"
#include "fob/report.h"
#include "fob/results.h"

namespace fob {

int report_command(const ReportArgs& args) {
  try {
    ReportFormat format = parse_report_format(args.format);
    ResultFile file = read_results(args.file);
    write_report(std::cout, file, format);
    return kExitOk;
  } catch (const InputError& e) {
    std::fprintf(stderr, "fobench report: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const RuntimeFault& e) {
    std::fprintf(stderr, "fobench report: error: %s\n", e.what());
    return kExitRuntimeFault;
  }
}

}  // namespace fob
