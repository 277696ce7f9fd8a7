// Helpers of `fobench run` (run_command.cpp), one place each.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fob/config.h"
#include "fob/executor.h"
#include "fob/plan.h"
#include "fob/results.h"
#include "fob/workload.h"

namespace fob {

std::string mpi_library_version();
std::string hostname();
// The environment variables that change what a run measures (NCCL_*, OMP_*, ...), one per line.
std::string recorded_env();

// The config file's text; InputError when it is not a regular file, cannot be read or is past
// the size a config may hold.
std::string read_config_file(const std::string& path);

// Rank 0 reads the file; every rank gets its text, or every rank gets the same error.
std::string broadcast_file(MPI_Comm comm, int rank, const std::string& path);
// `produce`'s text on rank 0, on every rank; or rank 0's InputError raised on every rank. `what`
// names the wait for the watchdog.
std::string broadcast_from_rank0(MPI_Comm comm, int rank, const std::string& what,
                                 const std::function<std::string()>& produce);

// Runs `rank0_step` on rank 0 and raises on every rank the InputError it may have met; `what`
// names the step for the watchdog.
void agree_on_error(MPI_Comm comm, int rank, const std::string& what,
                    const std::function<void()>& rank0_step);

// Settles `auto` and checks that backend, transport, dtype and options fit together.
void resolve_backend(Config& c);

// `config`'s backend settled, checked against every point of its sweep (each dtype must suit it).
void resolve_backends(Config& config, const std::vector<Config>& points);

// "0007": a case's id, its index across the whole sweep.
std::string case_id(size_t index);

// Whether a case already in a results file is this spec, measured to the end (with
// --auto-slices, at whatever count the run chose).
bool finished(const CaseResult& c, const CaseSpec& spec, int iters, bool auto_slices);

// --auto-slices: times each slice count for a few iterations and sets the fastest in `spec`;
// returns what was measured ("" when the strategy has no slice count). Collective.
std::string tune_slices(Executor& executor, CaseSpec& spec, const ExecOptions& base, int rank);

}  // namespace fob
