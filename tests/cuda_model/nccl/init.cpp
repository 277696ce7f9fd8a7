// Making a communicator (ncclCommInitRank, ncclCommInitRankConfig, ncclCommSplit's children), as
// NCCL 2.28.9's ncclCommInitRankFunc does and logs it (src/init.cc, v2.28.9-1 line numbers):
// "Init START" (:1561, :1574), the bootstrap (here the engine's join and an allgather of every
// rank's host, process and devices), the topology lines (connect.cpp), "Init COMPLETE" (:1593,
// :1598).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "api.h"
#include "debug.h"
#include "fobmodel/model.h"

namespace fobnccl {
namespace {

std::mutex g_comms_mu;
std::set<ncclComm_t> g_live, g_dead;  // dead handles stay allocated, so a stale one is known

// busIdToInt64 (src/misc/utils.cc): the hex digits of "0000:18:00.0", ':' and '.' skipped.
int64_t bus_id_value(const char* text) {
  std::string hex;
  for (size_t i = 0; text[i] != '\0' && hex.size() < 16; ++i) {
    const char c = text[i];
    if (c == '.' || c == ':') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) break;
    hex += c;
  }
  return hex.empty() ? 0 : std::strtoll(hex.c_str(), nullptr, 16);
}

RankInfo my_info(const ncclComm& comm) {
  RankInfo info{};
  char host[sizeof info.host] = "unknown";
  if (gethostname(host, sizeof host) != 0) std::snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  // NCCL's nodes are its host hashes; the model's are host names, cut as NCCL cuts them.
  std::snprintf(info.host, sizeof info.host, "%s",
                std::string(host).substr(0, std::string(host).find('.')).c_str());
  info.pid = getpid();
  info.cuda_dev = comm.cuda_dev;
  info.nvml_dev = comm.nvml_dev;
  info.bus_id = comm.bus_id;
  return info;
}

// NCCL's "Init START" and "Init COMPLETE" lines (init.cc:1561-1598), which differ only in their
// last words: `tail` is " - Init START", " - Init COMPLETE", or "- Init START" (NCCL's split
// line lacks the space, init.cc:1561).
void log_init(const ncclComm& comm, int rank, int nranks, const Origin& o, const char* tail) {
  if (o.parent != nullptr) {
    log::info(log::kInit,
              "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx parent %p splitCount "
              "%d color %d key %d%s",
              o.func, static_cast<const void*>(&comm), rank, nranks, comm.cuda_dev, comm.nvml_dev,
              static_cast<long>(comm.bus_id), static_cast<const void*>(o.parent), o.split_count,
              o.color, o.key, tail);
  } else {
    log::info(log::kInit,
              "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx%s",
              o.func, static_cast<const void*>(&comm), rank, nranks, comm.cuda_dev, comm.nvml_dev,
              static_cast<long>(comm.bus_id), static_cast<unsigned long long>(o.comm_id), tail);
  }
}

void log_start(const ncclComm& comm, int rank, int nranks, const Origin& o) {
  log_init(comm, rank, nranks, o, o.parent != nullptr ? "- Init START" : " - Init START");
}

void log_complete(const ncclComm& comm, const Origin& o) {
  log_init(comm, comm.engine->rank(), comm.engine->nranks(), o, " - Init COMPLETE");
}

// The rendezvous and the bootstrap allgather of every rank's RankInfo.
ncclResult_t join(ncclComm& comm, const Id& id, int nranks, int rank, const char* func) {
  Result result = kSuccess;
  std::string why;
  comm.engine = Comm::join(id, nranks, rank, model_settings(), &result, &why);
  if (!comm.engine) return warn(static_cast<ncclResult_t>(result), why);
  const RankInfo mine = my_info(comm);
  comm.ranks.resize(static_cast<size_t>(nranks));
  result = comm.engine->bootstrap_allgather(&mine, sizeof mine, comm.ranks.data(), func);
  if (result != kSuccess) {
    return warn(
        static_cast<ncclResult_t>(result),
        std::string(func) + ": the bootstrap allgather failed: " + comm.engine->async_text());
  }
  return ncclSuccess;
}

}  // namespace

Settings model_settings() {
  Settings s = settings_from_env();
  s.report = [](const std::string& rule, const std::string& text) {
    fobmodel::violation(rule, text);
  };
  return s;
}

ncclResult_t create_comm(ncclComm_t* out, const Id& id, int nranks, int rank,
                         const CommConfig& config, const Origin& origin) {
  auto comm = std::make_unique<ncclComm>();
  comm->config = config;
  if (cudaGetDevice(&comm->cuda_dev) != cudaSuccess) comm->cuda_dev = 0;
  char bus[32] = "";
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, comm->cuda_dev) == cudaSuccess) {
    comm->bus_id = bus_id_value(bus);
  }
  comm->nvml_dev = fobmodel::physical_device_of(comm->cuda_dev);
  const uint64_t start = fobmodel::clock_ns();
  log_start(*comm, rank, nranks, origin);
  if (const ncclResult_t r = join(*comm, id, nranks, rank, origin.func); r != ncclSuccess) {
    return r;
  }
  const double bootstrap_s = static_cast<double>(fobmodel::clock_ns() - start) / 1e9;
  comm->channels = channels_for(comm->config, nranks);
  if (origin.parent != nullptr && comm->config.split_share == 1) {
    // "child comm #channels cannot exceed top parent #channels" (connect.cc:486-488,
    // paths.cc:862-864) when it shares the parent's resources.
    comm->channels.coll = std::min(comm->channels.coll, origin.parent->channels.coll);
    comm->channels.p2p = std::min(comm->channels.p2p, origin.parent->channels.p2p);
    comm->channels.p2p_per_peer = std::min(comm->channels.p2p_per_peer, comm->channels.p2p);
  }
  log_topology(*comm);
  log_complete(*comm, origin);
  // init.cc:1604, INIT|PROFILE: the model's time is all bootstrap (the rendezvous and the
  // allgather); it has no kernels, allocations, topology search or connections to time.
  const double total_s = static_cast<double>(fobmodel::clock_ns() - start) / 1e9;
  log::info(log::kInit | log::kProfile,
            "Init timings - %s: rank %d nranks %d total %.2f (kernels %.2f, alloc %.2f, bootstrap "
            "%.2f, allgathers %.2f, topo %.2f, graphs %.2f, connections %.2f, rest %.2f)",
            origin.func, rank, nranks, total_s, 0.0, 0.0, bootstrap_s, 0.0, 0.0, 0.0, 0.0,
            total_s - bootstrap_s);
  comm->init_pending.store(config.blocking == 0);
  ncclComm_t made = comm.release();
  add_live(made);
  *out = made;
  return config.blocking == 0 ? ncclInProgress : ncclSuccess;
}

void add_live(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  g_live.insert(comm);
}

bool retire(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  if (!g_live.erase(comm)) return false;
  g_dead.insert(comm);
  return true;
}

ncclResult_t check_comm(ncclComm_t comm, const char* fn) {
  if (!comm) return warn(ncclInvalidArgument, std::string(fn) + ": comm is NULL");
  std::lock_guard<std::mutex> lock(g_comms_mu);
  if (g_live.count(comm)) return ncclSuccess;
  if (g_dead.count(comm)) {
    fobmodel::violation("nccl", std::string(fn) +
                                    " on a communicator already destroyed or "
                                    "aborted (NCCL API, ncclCommDestroy and "
                                    "ncclCommAbort free it)");
  }
  return warn(ncclInvalidArgument, std::string(fn) + ": not a live communicator");
}

}  // namespace fobnccl
