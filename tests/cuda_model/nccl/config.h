// A communicator's resolved configuration and the channel counts NCCL 2.28.9 would give it:
// parseCommConfig, copyCommConfig and envConfigOverride (src/init.cc), the channel caps of
// src/graph/connect.cc and the p2p channels of src/graph/paths.cc.
#pragma once

#include <nccl.h>

namespace fobnccl {

// The fields a communicator keeps, with NCCL's defaults (init.cc, NCCL_CONFIG_DEFAULT).
struct CommConfig {
  int blocking = 1;
  int cga_cluster_size = 4;
  int min_ctas = 1;
  int max_ctas = 64;  // MAXCHANNELS
  int split_share = 0;
};

// The channel counts of the "%d coll channels, %d collnet channels, %d nvls channels, %d p2p
// channels, %d p2p channels per peer" line.
struct Channels {
  int coll = 0;
  int nvls = 0;
  int p2p = 0;
  int p2p_per_peer = 0;
};

// The model's topology gives this many rings, as NCCL's graph search would find on the machine
// the model pretends to be: the model's number. NCCL's caps (maxCTAs, NCCL_MAX_NCHANNELS,
// MAXCHANNELS) apply to it as in NCCL.
constexpr int kTopologyRings = 32;
constexpr int kMaxChannels = 64;  // MAXCHANNELS (src/include/device.h)

// ncclCommInitRankConfig's, or ncclCommSplit's with a config: the checks (a failure WARNs and is
// ncclInvalidArgument), the user's fields logged under ENV ("Comm config Max CTAs set to %d"),
// NCCL's defaults for the rest, then the environment's overrides and the caps. `user` may be
// null: every field undefined.
ncclResult_t parse_config(const ncclConfig_t* user, CommConfig* out);
// ncclCommSplit without a config: the parent's resolved configuration, with the environment's
// overrides applied again (copyCommConfig).
CommConfig inherit_config(const CommConfig& parent);
// The channels of a communicator of `nranks` ranks with this configuration.
Channels channels_for(const CommConfig& config, int nranks);

}  // namespace fobnccl
