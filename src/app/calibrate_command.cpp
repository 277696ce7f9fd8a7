// `fobench calibrate`: a machine file fitted to measured results files, with the fit's
// residuals, so that `fobench sim` predicts this machine.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "fob/calibrate.h"
#include "fob/machine.h"
#include "fob/output_file.h"
#include "fob/result_files.h"
#include "fob/results.h"

namespace fob {

int calibrate_command(const CalibrateArgs& args) {
  return guarded("calibrate", [&] {
    if (args.files.empty()) throw InputError("calibrate: name at least one results file");
    if (args.output.empty()) throw InputError("-o: name the machine file to write (.yaml)");
    // A results file is data: --force replaces a machine file, never one of the inputs.
    check_output_path("-o", args.output, args.force, args.files);
    std::vector<ResultFile> files;
    for (const std::string& path : args.files) files.push_back(read_results(path));
    const std::string name =
        args.name.empty() ? std::filesystem::path(args.output).stem().string() : args.name;
    FitReport report;
    const Machine machine = calibrate(files, name, &report);

    // Written beside it and renamed over it, so a failure leaves no half-written machine file.
    std::ostringstream text;
    save_machine(text, machine);
    write_file_atomically(args.output, text.str());

    std::cout << "# fobench calibrate: " << args.output << "\n\n";
    std::cout << "| fitted to | measured (ms) | model (ms) | error (%) |\n|---|---:|---:|---:|\n";
    double worst = 0;
    for (const FitReport::Residual& r : report.residuals) {
      const double error =
          r.measured_s > 0 ? 100.0 * (r.fitted_s - r.measured_s) / r.measured_s : NAN;
      if (std::isfinite(error)) worst = std::max(worst, std::fabs(error));
      char line[256];
      std::snprintf(line, sizeof line, "| %s | %.4f | %.4f | %+.1f |\n", r.what.c_str(),
                    r.measured_s * 1e3, r.fitted_s * 1e3, error);
      std::cout << line;
    }
    std::cout << "\nlargest error: " << worst << " %\n";
    for (const std::string& note : report.notes) std::cout << "- note: " << note << "\n";
    for (const std::string& warning : report.warnings) {
      std::cout << "- WARNING: " << warning << "\n";
      std::fprintf(stderr, "fobench calibrate: warning: %s\n", warning.c_str());
    }
    return kExitOk;
  });
}

}  // namespace fob
