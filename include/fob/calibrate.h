// Fits a Machine to measured results files: the GEMM efficiency table from GEMM task timings,
// a link's latency and bandwidth from transfer timings, and the contention factor from GEMMs
// that ran while transfers were in flight.
#pragma once

#include <string>
#include <vector>

#include "fob/machine.h"
#include "fob/results.h"

namespace fob {

// How well the fit explains what it was fitted to.
struct FitReport {
  struct Residual {
    std::string what;  // "gemm 512x2048x512 fp32", "link shm 6291456 B", ...
    double measured_s = 0;
    double fitted_s = 0;
  };
  std::vector<Residual> residuals;
  std::vector<std::string> notes;  // what could not be fitted and what was assumed instead
  // What makes the fit doubtful (calibration_warnings), for the command to print on stderr.
  std::vector<std::string> warnings;
};

// Why a machine fitted to `files` may mislead: ranks that shared cores (the fitted launch and
// interference terms then price the turns they took), files of several world sizes fitted as one
// link, references whose step times varied past trust.h's threshold. Empty when none applies.
std::vector<std::string> calibration_warnings(const std::vector<ResultFile>& files);

// Throws InputError when the files hold nothing to fit (no GEMM timings, or no collective or
// exchange at world size 2 or more). Machine::source names the runs (created_utc, commit), the
// hosts and the date; ResultFile holds no path, so a caller that wants the file names in it
// adds them. `report` may be null.
Machine calibrate(const std::vector<ResultFile>& files, const std::string& name, FitReport* report);

}  // namespace fob
