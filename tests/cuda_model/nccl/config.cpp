// Communicator configuration and channel counts (config.h), after NCCL 2.28.9's src/init.cc
// (parseCommConfig, envConfigOverride, copyCommConfig), src/graph/connect.cc (the channel caps)
// and src/graph/paths.cc (ncclTopoComputeP2pChannels). Line numbers cite v2.28.9-1.
#include "config.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "api.h"
#include "debug.h"

namespace fobnccl {
namespace {

constexpr int kUndef = NCCL_CONFIG_UNDEF_INT;
constexpr int kMaxCgaClusterSize = 8;  // NCCL_MAX_CGA_CLUSTER_SIZE

struct FieldCheck {
  const char* name;  // as NCCL's message names the attribute
  std::string value;
  bool valid;
};

// "Invalid config ... attribute value" checks of parseCommConfig, in its order.
ncclResult_t check_fields(const ncclConfig_t& c) {
  const auto flag = [](int v) { return v == kUndef || v == 0 || v == 1; };
  const auto text = [](int v) { return std::to_string(v); };
  const FieldCheck checks[] = {
      {"blocking", text(c.blocking), flag(c.blocking)},
      {"cgaClusterSize", text(c.cgaClusterSize),
       c.cgaClusterSize == kUndef || c.cgaClusterSize >= 0},
      // minCTAs > maxCTAs is compared before defaults apply, so a minCTAs with maxCTAs left
      // undefined (INT_MIN) fails too, as in NCCL.
      {"min/max channels", text(c.minCTAs) + "/" + text(c.maxCTAs),
       (c.minCTAs == kUndef || c.minCTAs > 0) && (c.maxCTAs == kUndef || c.maxCTAs > 0) &&
           c.minCTAs <= c.maxCTAs},
      {"splitShare", text(c.splitShare), flag(c.splitShare)},
      {"collnetEnable", text(c.collnetEnable), flag(c.collnetEnable)},
      {"policy", text(c.CTAPolicy),
       c.CTAPolicy == kUndef ||
           (c.CTAPolicy >= NCCL_CTA_POLICY_DEFAULT && c.CTAPolicy <= NCCL_CTA_POLICY_ZERO)},
      {"shrinkShare", text(c.shrinkShare), flag(c.shrinkShare)},
      {"nvlsCTAs", text(c.nvlsCTAs), c.nvlsCTAs == kUndef || c.nvlsCTAs > 0},
      {"nChannelsPerNetPeer", text(c.nChannelsPerNetPeer),
       c.nChannelsPerNetPeer == kUndef ||
           (c.nChannelsPerNetPeer > 0 && c.nChannelsPerNetPeer <= kMaxChannels)},
      {"nvlinkCentricSched", text(c.nvlinkCentricSched), flag(c.nvlinkCentricSched)},
  };
  for (const FieldCheck& check : checks) {
    if (!check.valid) {
      return warn(ncclInvalidArgument,
                  std::string("Invalid config ") + check.name + " attribute value " + check.value);
    }
  }
  return ncclSuccess;
}

// NCCL_CONFIG_DEFAULT: "Comm config <field> set to <value>" under ENV for each field the user set,
// in parseCommConfig's order; the defaults for the rest.
void log_user_fields(const ncclConfig_t& c) {
  const std::pair<const char*, int> ints[] = {{"Blocking", c.blocking},
                                              {"CGA cluster size", c.cgaClusterSize},
                                              {"Min CTAs", c.minCTAs},
                                              {"Max CTAs", c.maxCTAs}};
  for (const auto& [name, value] : ints) {
    if (value != kUndef) log::info(log::kEnv, "Comm config %s set to %d", name, value);
  }
  if (c.netName != NCCL_CONFIG_UNDEF_PTR) {
    log::info(log::kEnv, "Comm config Net name set to %s", c.netName ? c.netName : "(null)");
  }
  const std::pair<const char*, int> more[] = {{"Split share", c.splitShare},
                                              {"Traffic class", c.trafficClass}};
  for (const auto& [name, value] : more) {
    if (value != kUndef) log::info(log::kEnv, "Comm config %s set to %d", name, value);
  }
  if (c.commName != NCCL_CONFIG_UNDEF_PTR) {
    log::info(log::kEnv, "Comm config Comm name set to %s", c.commName ? c.commName : "(null)");
  }
  const std::pair<const char*, int> rest[] = {{"Collnet enable", c.collnetEnable},
                                              {"CTA policy flags", c.CTAPolicy},
                                              {"shrinkShare", c.shrinkShare},
                                              {"nvlsCTAs", c.nvlsCTAs},
                                              {"nChannelsPerNetPeer", c.nChannelsPerNetPeer},
                                              {"nvlinkCentricSched", c.nvlinkCentricSched}};
  for (const auto& [name, value] : rest) {
    if (value != kUndef) log::info(log::kEnv, "Comm config %s set to %d", name, value);
  }
}

// NCCL_MIN_CTAS / NCCL_MAX_CTAS over the configuration (init.cc:1661-1683).
void override_ctas(const char* name, const char* field, int* value) {
  const auto env = static_cast<int>(log::param(name, kUndef));
  if (env == kUndef) return;
  if (env <= 0) {
    log::info(log::kEnv, "NCCL_%s %d is too low, leaving it set at %d", name, env, *value);
    return;
  }
  log::info(log::kEnv, "Comm config %s reset to NCCL_%s=%d", field, name, env);
  *value = env;
}

// envConfigOverride: the environment wins over the configuration, then the caps.
void env_override(CommConfig* c) {
  const auto blocking = static_cast<int>(log::param("COMM_BLOCKING", kUndef));
  if (blocking == 0 || blocking == 1) c->blocking = blocking;
  const auto cga = static_cast<int>(log::param("CGA_CLUSTER_SIZE", kUndef));
  if (0 <= cga && cga <= kMaxCgaClusterSize) {
    log::info(log::kEnv, "Comm config cgaClusterSize reset to NCCL_MAX_CGA_CLUSTER_SIZE=%d", cga);
    c->cga_cluster_size = cga;
  } else if (cga > kMaxCgaClusterSize) {
    log::info(log::kEnv, "NCCL_CGA_CLUSTER_SIZE value %d is too big. Limiting value to %d.", cga,
              kMaxCgaClusterSize);
    c->cga_cluster_size = kMaxCgaClusterSize;
  }
  override_ctas("MIN_CTAS", "minCTAs", &c->min_ctas);
  override_ctas("MAX_CTAS", "maxCTAs", &c->max_ctas);
  const auto share = static_cast<int>(log::param("COMM_SPLIT_SHARE_RESOURCES", kUndef));
  if (share != kUndef) {
    log::info(log::kEnv, "Comm config splitShare reset to NCCL_COMM_SPLIT_SHARE_RESOURCES=%d",
              share);
    c->split_share = share;
  }
  if (c->min_ctas > kMaxChannels) {
    log::info(log::kEnv, "minCTAs %d is larger than #channels upper limit %d, cap it to %d",
              c->min_ctas, kMaxChannels, kMaxChannels);
    c->min_ctas = kMaxChannels;
  }
  if (c->max_ctas > kMaxChannels) {
    log::info(log::kEnv, "maxCTAs %d is larger than #channels upper limit %d, cap it to %d",
              c->max_ctas, kMaxChannels, kMaxChannels);
    c->max_ctas = kMaxChannels;
  }
  if (c->min_ctas > c->max_ctas) {
    log::info(log::kEnv, "minCTAs %d is larger than maxCTAs %d, set both to %d", c->min_ctas,
              c->max_ctas, c->max_ctas);
    c->min_ctas = c->max_ctas;
  }
  if (c->split_share != 0 && c->split_share != 1) {
    log::info(log::kEnv, "splitShare %d is not a valid value 0/1, set it to 0", c->split_share);
    c->split_share = 0;
  }
}

int pow2_up(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

}  // namespace

ncclResult_t parse_config(const ncclConfig_t* user, CommConfig* out) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  if (user != nullptr) {
    // "Config initializer must be assigned to initialize config structure when it is created.
    // Not initialized config will result in NCCL error." (nccl.h). A size too small to hold
    // the CTA fields is refused as well: the model does not guess the rest.
    if (user->magic != 0xcafebeef || user->size < offsetof(ncclConfig_t, netName)) {
      return warn(ncclInvalidArgument,
                  "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
    }
    std::memcpy(&c, user, std::min(user->size, sizeof c));
    // Fields a config of an older NCCL cannot have set take the defaults (parseCommConfig).
    if (c.version < NCCL_VERSION(2, 14, 0)) c.blocking = kUndef;
    if (c.version < NCCL_VERSION(2, 17, 0)) c.cgaClusterSize = c.minCTAs = c.maxCTAs = kUndef;
  }
  if (const ncclResult_t r = check_fields(c); r != ncclSuccess) return r;
  log_user_fields(c);
  CommConfig resolved;
  if (c.blocking != kUndef) resolved.blocking = c.blocking;
  if (c.cgaClusterSize != kUndef) resolved.cga_cluster_size = c.cgaClusterSize;
  if (c.minCTAs != kUndef) resolved.min_ctas = c.minCTAs;
  if (c.maxCTAs != kUndef) resolved.max_ctas = c.maxCTAs;
  if (c.splitShare != kUndef) resolved.split_share = c.splitShare;
  env_override(&resolved);
  *out = resolved;
  return ncclSuccess;
}

CommConfig inherit_config(const CommConfig& parent) {
  CommConfig child = parent;
  env_override(&child);
  return child;
}

namespace {

// ncclMaxNchannels / ncclMinNchannels (connect.cc:328-356): NCCL_MAX_NCHANNELS (or the legacy
// NCCL_MAX_NRINGS), within [1, MAXCHANNELS]; NCCL_MIN_NCHANNELS (NCCL_MIN_NRINGS), within
// [0, MAXCHANNELS].
int max_nchannels() {
  int value = kMaxChannels;
  if (const auto rings = static_cast<int>(log::param("MAX_NRINGS", -2)); rings != -2) value = rings;
  if (const auto env = static_cast<int>(log::param("MAX_NCHANNELS", -2)); env != -2) value = env;
  value = std::min(value, kMaxChannels);
  if (value < 1) {
    log::info(log::kGraph | log::kEnv, "User asked for a maximum of %d channels, setting it to 1",
              value);
    value = 1;
  }
  return value;
}

int min_nchannels() {
  int value = 0;
  if (const auto rings = static_cast<int>(log::param("MIN_NRINGS", -2)); rings != -2) value = rings;
  if (const auto env = static_cast<int>(log::param("MIN_NCHANNELS", -2)); env != -2) value = env;
  if (value > kMaxChannels) {
    log::info(log::kGraph | log::kEnv, "User asked for a minimum of %d channels, limiting to %d",
              value, kMaxChannels);
    value = kMaxChannels;
  }
  return std::max(value, 0);
}

}  // namespace

// connect.cc:485-492: nChannels = min(ncclMaxNchannels(), the graph's channels, maxCTAs), then
// copied up to max(ncclMinNchannels(), minCTAs). paths.cc:862-883: p2p channels = pow2Up(
// max(min(nChannels, NCCL_MAX_P2P_NCHANNELS), NCCL_MIN_P2P_NCHANNELS)); per peer pow2Up of the
// fewest channels to a peer, which on the model's topology is an even share of the p2p channels
// among the other ranks, and never more than the p2p channels.
Channels channels_for(const CommConfig& config, int nranks) {
  Channels out;
  out.coll = std::min({max_nchannels(), kTopologyRings, config.max_ctas});
  out.coll = std::max(out.coll, std::max(min_nchannels(), config.min_ctas));
  const auto max_p2p = static_cast<int>(log::param("MAX_P2P_NCHANNELS", kMaxChannels));
  const auto min_p2p = static_cast<int>(log::param("MIN_P2P_NCHANNELS", 1));
  out.p2p = pow2_up(std::max(std::min(out.coll, max_p2p), min_p2p));
  out.p2p_per_peer = std::min(pow2_up(std::max(1, out.p2p / std::max(1, nranks - 1))), out.p2p);
  return out;
}

}  // namespace fobnccl
