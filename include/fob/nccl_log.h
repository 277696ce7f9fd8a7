// What NCCL says of its own communicators in its INFO log (NCCL_DEBUG=INFO,
// NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,REG,P2P,SHM,NET): channel counts, the path type its ring runs
// over, and the transport to each peer. NCCL has no query API for these (nccl.h 2.28), so the cuda
// backend points NCCL_DEBUG_FILE at a file of its own and reads them back; the parsing is plain
// text, kept here so that it is tested without a GPU. The formats are NCCL 2.28's
// (src/init.cc, src/graph/search.cc, src/transport/{p2p,shm,net}.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fob {

struct NcclCommFacts {
  // "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p
  // channels per peer"; -1 where NCCL did not say.
  int coll_channels = -1, nvls_channels = -1, p2p_channels = -1, p2p_channels_per_peer = -1;
  // "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  int nodes = -1, local_ranks = -1;
  // The ring graph's path types inside a node and between nodes ("Pattern 4, ..., type
  // NVL/PIX"): NVL NVLink, NVB NVLink through a GPU, C2C, PIX/PXB/PHB/SYS PCIe and host
  // bridges, NET; empty where NCCL did not say.
  std::string ring_intra, ring_inter;
  // The CTA limit NCCL reported taking from the config or the environment ("Comm config Max CTAs
  // set to %d", "NCCL_MAX_CTAS set by environment to %lld."); -1: none (NCCL's default).
  int max_ctas = -1;
  bool max_ctas_from_env = false;
  std::string comm;  // the communicator's address as NCCL printed it ("0x55d4...")
};

// A communicator's init lines (everything it logged from its "Init START" to its "Init COMPLETE").
NcclCommFacts parse_nccl_init(const std::vector<std::string>& lines);

// The transports of the connections the lines report ("Channel 00/1 : 0[0] -> 1[1] via
// P2P/CUMEM/read"): per peer rank of `rank`, the distinct transports, "P2P/CUMEM/read" or
// "NET/IB/0/GDRDMA", channel numbers dropped. `p2p`: send/recv connections (connIndex 1) only,
// else collective ones (connIndex 0, and SHM lines, which carry no index).
std::map<int, std::vector<std::string>> parse_nccl_transports(const std::vector<std::string>& lines,
                                                              int rank, bool p2p);

// Whether a path type is NVLink (NVL, NVB) or a chip-to-chip link (C2C) rather than PCIe or a
// host bridge.
bool nvlink_path(const std::string& type);

// The WARN lines among `lines`, which NCCL writes to the debug file instead of stderr.
std::vector<std::string> nccl_warnings(const std::vector<std::string>& lines);

}  // namespace fob
