// `fobench calibrate`: a machine file fitted to measured results files, with the fit's
// residuals, so that `fobench sim` predicts this machine.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "fob/calibrate.h"
#include "fob/machine.h"
#include "fob/results.h"

namespace fob {

int calibrate_command(const CalibrateArgs& args) {
  return guarded("calibrate", [&] {
    if (args.files.empty()) throw InputError("calibrate: name at least one results file");
    if (args.output.empty()) throw InputError("-o: name the machine file to write (.yaml)");
    for (const std::string& input : args.files) {
      std::error_code ec;
      // A results file is data: --force replaces a machine file, never one of the inputs.
      if (input == args.output || std::filesystem::equivalent(input, args.output, ec)) {
        throw InputError("-o: '" + args.output + "' is one of the results files to fit ('" + input +
                         "'); name a new machine file (.yaml)");
      }
    }
    if (std::filesystem::exists(args.output) && !args.force) {
      throw InputError("-o: '" + args.output + "' exists; pass --force to overwrite it");
    }
    std::vector<ResultFile> files;
    for (const std::string& path : args.files) files.push_back(read_results(path));
    const std::string name =
        args.name.empty() ? std::filesystem::path(args.output).stem().string() : args.name;
    FitReport report;
    const Machine machine = calibrate(files, name, &report);

    // Written beside it and renamed over it, so a failure leaves no half-written machine file.
    std::ostringstream text;
    save_machine(text, machine);
    const std::string tmp = args.output + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << text.str();
    out.close();
    std::error_code ec;
    if (out) std::filesystem::rename(tmp, args.output, ec);
    if (!out || ec) {
      std::filesystem::remove(tmp, ec);
      throw InputError("-o: cannot write '" + args.output + "'");
    }

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
    return kExitOk;
  });
}

}  // namespace fob
