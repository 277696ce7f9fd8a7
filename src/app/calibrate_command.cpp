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
  try {
    if (args.files.empty()) throw InputError("calibrate: name at least one results file");
    if (args.output.empty()) throw InputError("-o: name the machine file to write (.yaml)");
    if (std::filesystem::exists(args.output) && !args.force) {
      throw InputError("-o: '" + args.output + "' exists; pass --force to overwrite it");
    }
    std::vector<ResultFile> files;
    for (const std::string& path : args.files) files.push_back(read_results(path));
    const std::string name =
        args.name.empty() ? std::filesystem::path(args.output).stem().string() : args.name;
    FitReport report;
    const Machine machine = calibrate(files, name, &report);

    // Written in memory first, so a failure leaves no half-written machine file.
    std::ostringstream text;
    save_machine(text, machine);
    std::ofstream out(args.output, std::ios::trunc);
    out << text.str();
    out.close();
    if (!out) throw InputError("-o: cannot write '" + args.output + "'");

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
  } catch (const InputError& e) {
    std::fprintf(stderr, "fobench calibrate: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fobench calibrate: error: %s\n", e.what());
    return kExitRuntimeFault;
  }
}

}  // namespace fob
