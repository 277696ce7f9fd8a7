// The NCCL model's C API layer, shared by its files: nccl_api.cpp (errors, calls, destroy and
// abort), init.cpp (making a communicator), split.cpp (ncclCommSplit), group.cpp (groups and the
// ops they put on streams), connect.cpp (what NCCL logs of its topology and connections),
// register.cpp (ncclMemAlloc and buffer registration) and config.cpp.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "config.h"
#include "engine.h"

namespace fobnccl {

// What each rank tells the others when a communicator is made (over the bootstrap), for the log
// lines that count nodes and name peers' devices: a fixed layout, the same in every process.
struct RankInfo {
  char host[64];
  int32_t pid;
  int32_t cuda_dev;
  int32_t nvml_dev;
  int32_t pad;
  int64_t bus_id;
};

// A registered range (ncclCommRegister), page-rounded as NCCL keeps it, and how many
// registrations it stands for.
struct Registration {
  uintptr_t begin = 0, end = 0;
  int refs = 1;
};

}  // namespace fobnccl

// ncclComm_t is `struct ncclComm*` in nccl.h: the model's communicator.
struct ncclComm {
  std::shared_ptr<fobnccl::Comm> engine;
  std::atomic<bool> init_pending{false};  // nonblocking init: ncclInProgress until first asked
  std::atomic<int> queued{0};             // ops put on streams (not captured) that have not run
  fobnccl::CommConfig config;             // resolved, as NCCL keeps comm->config
  fobnccl::Channels channels;
  int cuda_dev = 0, nvml_dev = 0;
  int64_t bus_id = 0;  // busIdToInt64 of the device's PCI bus id
  int split_count = 0;
  std::vector<fobnccl::RankInfo> ranks;  // every rank's, in rank order
  std::mutex mu;                         // what follows
  std::vector<std::unique_ptr<fobnccl::Registration>> registrations;
  std::set<int> send_connected;  // peers this rank's p2p sends have connected to
  bool ring_connected = false;   // the collectives' ring, connected at the first collective
};

namespace fobnccl {

// The communicator a call names: ncclInvalidArgument for null or a handle that is not one, and
// a destroyed or aborted one is also the rule "nccl" (the real library would use freed memory).
ncclResult_t check_comm(ncclComm_t comm, const char* fn);
// Says why a call failed, as NCCL's WARN does (debug.h; on stderr where NCCL_DEBUG is unset), and
// returns `r`.
ncclResult_t warn(ncclResult_t r, const std::string& text,
                  std::source_location where = std::source_location::current());
int group_depth();
// A call inside a group failed: ncclGroupEnd returns the error too.
void note_group_error(ncclResult_t r);
// Queues a call: now (a group of one) outside a group, at the outermost ncclGroupEnd inside one.
ncclResult_t submit(ncclComm_t comm, cudaStream_t stream, const Call& call);

// init.cpp. How a communicator comes to be, for its "Init START" and "Init COMPLETE" lines.
struct Origin {
  const char* func = "ncclCommInitRank";  // the API call, NCCL's job->funcName
  uint64_t comm_id = 0;                   // getHash of the unique id (0 for a split)
  ncclComm_t parent = nullptr;
  int split_count = 0, color = 0, key = 0;
};
// The engine's settings with the runtime model's violation() as the reporter.
Settings model_settings();
// Joins rank `rank` of `nranks` to the rendezvous `id` and makes the communicator, logging as
// NCCL's init does; *out gets it (ncclInProgress for a nonblocking configuration).
ncclResult_t create_comm(ncclComm_t* out, const Id& id, int nranks, int rank,
                         const CommConfig& config, const Origin& origin);
// Handles: live ones, and dead ones kept so that a stale one is recognised.
void add_live(ncclComm_t comm);
bool retire(ncclComm_t comm);  // false if it was not live

// connect.cpp. The INIT and GRAPH lines of a communicator's init, after the bootstrap.
void log_topology(const ncclComm& comm);
// The connections a group's calls need that this rank has not made yet, logged as NCCL 2.28
// makes them: lazily, at the ncclGroupEnd (or call) that first needs them.
void connect(ncclComm& comm, const std::vector<Call>& calls);
// The note of the op that runs `calls`: "comm=<p> max_ctas=<n> coll_channels=<n> bytes=<n>
// registered=<0|1>".
std::string op_note(ncclComm& comm, const std::vector<Call>& calls);

// register.cpp. Whether [p, p + bytes) lies in one range registered with the communicator.
bool registered(ncclComm& comm, const void* p, size_t bytes);
// With FOB_MODEL_NCCL_REQUIRE_REGISTERED=1, a buffer of the call outside every registered range
// is the rule "nccl-unregistered".
void require_registered(ncclComm& comm, const Call& call, const char* fn);
// The buffers a call reads or writes, and their sizes, on a communicator of `nranks`.
std::vector<std::pair<const void*, size_t>> buffers_of(const Call& call, int nranks);
// Every registration still there when the communicator goes: "Cleanup buffer %p pages %lx".
void cleanup_registrations(ncclComm& comm);

}  // namespace fobnccl
