// ncclCommSplit, as NCCL 2.28.9 does it (src/init.cc, ncclCommInitChildComm and commGetSplitInfo,
// v2.28.9-1 lines 2550-2640 and 1455-1495) over the model's engine: every rank of the parent
// makes the call; an allgather of (color, key) over the parent's bootstrap decides each new
// communicator's ranks, ordered by key and then by parent rank; the first rank of each color
// makes a fresh rendezvous and a second allgather hands its id to the others, who join it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "api.h"
#include "debug.h"

namespace fobnccl {
namespace {

struct SplitInfo {
  int32_t color;
  int32_t key;
};

// The parent ranks of `color`, in the new communicator's rank order: by key, a tie by parent rank
// (commGetSplitInfo inserts each rank after every earlier one whose key is not larger).
std::vector<int> members(const std::vector<SplitInfo>& all, int color) {
  std::vector<int> order;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[static_cast<size_t>(r)].color != color) continue;
    size_t at = 0;
    while (at < order.size() && all[static_cast<size_t>(order[at])].key <= all[r].key) ++at;
    order.insert(order.begin() + static_cast<long>(at), r);
  }
  return order;
}

ncclResult_t engine_failure(Result r, const ncclComm& parent) {
  return warn(static_cast<ncclResult_t>(r),
              "ncclCommSplit: the bootstrap allgather failed: " + parent.engine->async_text());
}

// The two bootstrap rounds: everyone's (color, key), then each color's rendezvous id, made by the
// color's first rank. *id gets this rank's; *ranks its color's parent ranks in order.
ncclResult_t exchange(ncclComm& parent, int color, int key, Id* id, std::vector<int>* ranks) {
  const int n = parent.engine->nranks(), me = parent.engine->rank();
  std::vector<SplitInfo> all(static_cast<size_t>(n));
  const SplitInfo mine{color, key};
  Result r = parent.engine->bootstrap_allgather(&mine, sizeof mine, all.data(), "ncclCommSplit");
  if (r != kSuccess) return engine_failure(r, parent);
  if (color != NCCL_SPLIT_NOCOLOR) *ranks = members(all, color);
  Id made;
  if (!ranks->empty() && ranks->front() == me) {
    std::string why;
    if (create_id(&made, &why) != kSuccess) return warn(ncclSystemError, "ncclCommSplit: " + why);
  }
  std::vector<Id> ids(static_cast<size_t>(n));
  r = parent.engine->bootstrap_allgather(&made, sizeof made, ids.data(), "ncclCommSplit");
  if (r != kSuccess) return engine_failure(r, parent);
  if (!ranks->empty()) *id = ids[static_cast<size_t>(ranks->front())];
  return ncclSuccess;
}

}  // namespace
}  // namespace fobnccl

// "Ranks with the same color will end up in the same communicator. Within the new communicator,
// key will be used to order ranks. NCCL_SPLIT_NOCOLOR as color will indicate the rank will not
// be part of any group and will therefore return a NULL communicator. If config is NULL, the new
// communicator will inherit the original communicator's configuration" (nccl.h). A config given
// is parsed as a new communicator's, so the fields it leaves undefined take NCCL's defaults, not
// the parent's (parseCommConfig vs copyCommConfig, init.cc:2598-2602).
extern "C" ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                      ncclConfig_t* config) {
  using namespace fobnccl;
  if (const ncclResult_t r = check_comm(comm, "ncclCommSplit"); r != ncclSuccess) return r;
  if (newcomm == nullptr)
    return warn(ncclInvalidArgument, "ncclCommSplit : newcomm argument is NULL");
  // NCCL's documentation asks for a color that is "a non-negative integer" or
  // NCCL_SPLIT_NOCOLOR; the library groups any value, the model refuses the rest.
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return warn(ncclInvalidArgument, "ncclCommSplit: color " + std::to_string(color) +
                                         " is neither non-negative nor NCCL_SPLIT_NOCOLOR");
  }
  if (group_depth() > 0) {
    return warn(ncclInvalidUsage, "the model does not take ncclCommSplit in a group");
  }
  *newcomm = nullptr;
  CommConfig resolved;
  if (color == NCCL_SPLIT_NOCOLOR) {
    log::info(log::kInit,
              "Rank %d has color with NCCL_SPLIT_NOCOLOR, not creating a new communicator",
              comm->engine->rank());
  } else if (config == nullptr) {
    resolved = inherit_config(comm->config);
  } else if (const ncclResult_t r = parse_config(config, &resolved); r != ncclSuccess) {
    return r;
  }
  // "each split has to lead to a unique comm, so increment the splitCount" (init.cc:2621).
  const int split_count = ++comm->split_count;
  Id id;
  std::vector<int> ranks;
  if (const ncclResult_t r = exchange(*comm, color, key, &id, &ranks); r != ncclSuccess) return r;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  const int me = comm->engine->rank();
  const int rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), me) - ranks.begin());
  Origin origin;
  origin.func = "ncclCommSplit";
  origin.parent = comm;
  origin.split_count = split_count;
  origin.color = color;
  origin.key = key;
  // The child is made on the parent's device, the caller's restored after (init.cc:2556-2625).
  int saved = 0;
  cudaGetDevice(&saved);
  cudaSetDevice(comm->cuda_dev);
  const ncclResult_t r =
      create_comm(newcomm, id, static_cast<int>(ranks.size()), rank, resolved, origin);
  cudaSetDevice(saved);
  return r;
}
