// The harness: runs a plan on a backend for warm-up and timed iterations, verifies its output,
// and gathers every rank's timings to rank 0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <mpi.h>

#include "fob/backend.h"
#include "fob/plan.h"
#include "fob/results.h"

namespace fob {

struct ExecOptions {
  int iters = 20;
  int warmup = 2;
  double timeout_s = 300;
  bool verify = true;
  uint64_t seed = 1;
  // When set, rank 0 prints "<label>: iteration i/n, running median" to stderr every few
  // seconds.
  std::string progress_label;
};

class Executor {
 public:
  Executor(Backend& backend, MPI_Comm comm);

  // Runs one case. The returned result is complete on rank 0; other ranks get the case fields
  // and the verification outcome only. Verification failures are printed by the failing rank.
  CaseResult run_case(const Plan& plan, const ExecOptions& options, const std::string& id);

 private:
  IterationTimes iterate(const Plan& plan, double timeout_s);
  int verify(const Plan& plan, const ExecOptions& options, const std::string& id, double* max_err);
  const std::vector<double>& expected(const Plan& plan, const OutputCheck& check, uint64_t seed);

  Backend& backend_;
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  std::map<std::string, std::vector<double>> reference_cache_;
};

}  // namespace fob
