// --link-ratio: the emulated bandwidth that puts a run in a chosen T_comm / T_comp regime on
// whatever CPU it runs, found by probing before the run.
#pragma once

#include <mpi.h>

#include <string>

#include "fob/backend.h"
#include "fob/executor.h"
#include "fob/results.h"
#include "fob/workload.h"

namespace fob {

struct LinkChoice {
  double gbps = 0;
  std::string probe;  // how it was chosen, for the results file's notes and stderr
};

// Times `first`'s compute_only and comm_only paired at a few emulated bandwidths, each a
// correction of the last (T_comm scales as one over the bandwidth where the bandwidth dominates),
// and returns the probed bandwidth whose T_comm / T_comp came closest to `ratio`, its account
// ending with the ratio it reached and, where that is more than 3x off, "NOT REACHED" with
// why (the floor the emulated latency and the host's MPI path set, the slowest rate, or probes
// that did not settle) and what to change. Collective: every rank calls it with the same
// arguments and gets rank 0's choice (or error). `options` is the run's backend setup (its latency
// is kept), `timing` its execution options (fewer iterations are used).
LinkChoice choose_link(double ratio, const CaseSpec& first, int rank, BackendOptions options,
                       ExecOptions timing);

// The emulated link a results file recorded (`path` names it in messages): its rate (the one
// its --link-ratio chose, to 9 digits, where it chose one) and how it was chosen, word for
// word, so that a run reusing it records the same link emulation and a resume matches.
// InputError when the file's link was not emulated or its record does not parse.
LinkChoice recorded_link(const SystemInfo& system, const std::string& path);

}  // namespace fob
