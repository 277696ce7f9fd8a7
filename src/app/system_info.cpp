// /system: what the backend, the libraries and the launcher say about where the run ran.
#include "system_info.h"

#include <unistd.h>

#include <map>
#include <thread>

#include "core/gather.h"
#include "core/watchdog.h"
#include "run_support.h"

namespace fob {

SystemInfo describe_system(MPI_Comm comm, int rank, int world, Backend& backend,
                           const Config& config, RankPlaces& places) {
  SystemInfo system;
  system.backend = backend.name();
  system.transport = backend.transport();
  system.world_size = world;
  system.copy_engines = backend.copy_engines();
  system.mpi_version = mpi_library_version();
  system.nccl_version = "n/a";
  system.cuda_version = "n/a";
  if (backend.name() == "cuda") {
    system.cuda_version = cuda_versions();
    system.nccl_version =
        system.transport == "nccl" ? nccl_version() : "n/a (transport " + system.transport + ")";
  }
  system.blas = backend.blas();
  system.link_emulation = config.link.describe();
  if (!config.link_probe.empty()) system.link_emulation += " (" + config.link_probe + ")";
  system.timer = backend.timer();
  system.env = recorded_env();
  {
    const watchdog::Wait wait("gathering every rank's host, device and pid");
    places.hosts = gather_strings(comm, hostname());
    places.devices = gather_strings(comm, backend.device());
    places.pids = gather_strings(comm, std::to_string(getpid()));
  }
  std::string facts;
  for (const std::string& fact : backend.run_facts()) {
    facts += (facts.empty() ? "" : "\n") + ("rank " + std::to_string(rank) + ": " + fact);
  }
  std::vector<std::string> every_rank;
  {
    const watchdog::Wait wait("gathering every rank's account of its hardware");
    every_rank = gather_strings(comm, facts);
  }
  if (rank == 0) {
    // More ranks than cores on a host: the ranks time-share the cores, one compute task per
    // core at a time (the CPU backend's core slots), which a reader must know.
    std::map<std::string, int> per_host;
    for (const std::string& h : places.hosts) ++per_host[h];
    const unsigned cores = std::thread::hardware_concurrency();
    for (const auto& [host, ranks] : per_host) {
      const unsigned threads = config.backend == "cpu" ? 1u * config.blas_threads : 0u;
      if (threads > 0 && cores > 0 && ranks * threads > cores) {
        system.notes = std::to_string(ranks) + " ranks shared " + std::to_string(cores) +
                       " cores on " + host +
                       ": compute tasks took turns on the cores, so every time is that of " +
                       std::to_string(cores) + " cores serving " + std::to_string(ranks) +
                       " ranks and run-to-run noise is larger; compare strategies with each other";
      }
    }
    for (const std::string& f : every_rank) {
      if (!f.empty()) system.hardware += (system.hardware.empty() ? "" : "\n") + f;
    }
    system.hostnames = join_list(places.hosts, ",");
    system.devices = join_list(places.devices, ",");
  }
  return system;
}

}  // namespace fob
