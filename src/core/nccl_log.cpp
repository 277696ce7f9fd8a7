#include "fob/nccl_log.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace fob {
namespace {

// The message after NCCL's prefix ("host:pid:tid [dev] NCCL INFO "), or "" for another line.
std::string info_text(const std::string& line) {
  static const std::string kInfo = " NCCL INFO ";
  const size_t at = line.find(kInfo);
  return at == std::string::npos ? "" : line.substr(at + kInfo.size());
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

void parse_channels(const std::string& text, NcclCommFacts& f) {
  int coll = 0, collnet = 0, nvls = 0, p2p = 0, per_peer = 0;
  if (std::sscanf(text.c_str(),
                  "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d "
                  "p2p channels per peer",
                  &coll, &collnet, &nvls, &p2p, &per_peer) == 5) {
    f.coll_channels = coll;
    f.nvls_channels = nvls;
    f.p2p_channels = p2p;
    f.p2p_channels_per_peer = per_peer;
  }
}

// "Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s, sameChannels %d": the ring's
// (pattern 4) is kept; another pattern only until the ring's is seen.
void parse_pattern(const std::string& text, NcclCommFacts& f, bool* have_ring) {
  int pattern = 0;
  if (std::sscanf(text.c_str(), "Pattern %d,", &pattern) != 1) return;
  const size_t at = text.find(", type ");
  if (at == std::string::npos) return;
  const size_t begin = at + 7;
  const size_t slash = text.find('/', begin);
  const size_t end = text.find(',', begin);
  if (slash == std::string::npos || end == std::string::npos || slash > end) return;
  if (*have_ring) return;
  f.ring_intra = text.substr(begin, slash - begin);
  f.ring_inter = text.substr(slash + 1, end - slash - 1);
  *have_ring = pattern == 4;
}

void parse_comm(const std::string& text, NcclCommFacts& f) {
  char comm[64] = {};
  int rank = 0, nranks = 0, nodes = 0, local = 0;
  if (std::sscanf(text.c_str(), "comm %63s rank %d nRanks %d nNodes %d localRanks %d", comm, &rank,
                  &nranks, &nodes, &local) == 5) {
    f.comm = comm;
    f.nodes = nodes;
    f.local_ranks = local;
  }
}

void parse_ctas(const std::string& text, NcclCommFacts& f) {
  int n = 0;
  long long env = 0;
  if (std::sscanf(text.c_str(), "Comm config Max CTAs set to %d", &n) == 1) {
    if (!f.max_ctas_from_env) f.max_ctas = n;
  } else if (std::sscanf(text.c_str(), "NCCL_MAX_CTAS set by environment to %lld", &env) == 1 ||
             std::sscanf(text.c_str(), "Comm config maxCTAs reset to NCCL_MAX_CTAS=%lld", &env) ==
                 1) {
    f.max_ctas = static_cast<int>(env);
    f.max_ctas_from_env = true;
  }
}

}  // namespace

NcclCommFacts parse_nccl_init(const std::vector<std::string>& lines) {
  NcclCommFacts f;
  bool have_ring = false;
  for (const std::string& line : lines) {
    const std::string text = info_text(line);
    if (text.empty()) continue;
    if (text.find(" coll channels, ") != std::string::npos) parse_channels(text, f);
    if (starts_with(text, "Pattern ")) parse_pattern(text, f, &have_ring);
    if (starts_with(text, "comm ")) parse_comm(text, f);
    parse_ctas(text, f);
  }
  return f;
}

std::map<int, std::vector<std::string>> parse_nccl_transports(const std::vector<std::string>& lines,
                                                              int rank, bool p2p) {
  std::map<int, std::vector<std::string>> out;
  for (const std::string& line : lines) {
    const std::string text = info_text(line);
    if (!starts_with(text, "Channel ")) continue;
    const size_t via = text.find(" via ");
    const size_t colon = text.find(" : ");
    if (via == std::string::npos || colon == std::string::npos || colon > via) continue;
    // "Channel 00/1" names its connection index; SHM's "Channel 00" does not.
    const std::string head = text.substr(0, colon);
    const size_t slash = head.find('/');
    const bool indexed = slash != std::string::npos;
    if (indexed && (head.substr(slash + 1) == "1") != p2p) continue;
    int from = -1, from_dev = 0, to = -1, to_dev = 0;
    if (std::sscanf(text.c_str() + colon + 3, "%d[%d] -> %d[%d]", &from, &from_dev, &to, &to_dev) !=
        4) {
      continue;
    }
    const int peer = from == rank ? to : to == rank ? from : -1;
    if (peer < 0) continue;
    std::string transport = text.substr(via + 5);
    while (!transport.empty() && (transport.back() == '\n' || transport.back() == '\r')) {
      transport.pop_back();
    }
    std::vector<std::string>& seen = out[peer];
    if (std::find(seen.begin(), seen.end(), transport) == seen.end()) seen.push_back(transport);
  }
  return out;
}

bool nvlink_path(const std::string& type) {
  return type == "NVL" || type == "NVB" || type == "C2C";
}

std::vector<std::string> nccl_warnings(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    if (line.find(" NCCL WARN ") != std::string::npos) out.push_back(line);
  }
  return out;
}

}  // namespace fob
