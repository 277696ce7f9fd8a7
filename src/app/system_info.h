// What `fobench run` records about the machine it ran on (/system in the results file).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "fob/backend.h"
#include "fob/config.h"
#include "fob/results.h"

namespace fob {

// Where each rank ran, in rank order (on rank 0; empty elsewhere).
struct RankPlaces {
  std::vector<std::string> hosts, devices, pids;
};

// The backend's, the libraries' and the hosts' description, with a note when ranks time-share
// a host's cores. Collective: gathers every rank's host, device and pid into `places`.
SystemInfo describe_system(MPI_Comm comm, int rank, int world, Backend& backend,
                           const Config& config, RankPlaces& places);

}  // namespace fob
