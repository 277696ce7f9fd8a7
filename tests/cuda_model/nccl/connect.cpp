// What NCCL 2.28.9 logs of a communicator's topology and connections (v2.28.9-1 line numbers),
// on the model's machine (FOB_MODEL_TOPOLOGY, fobmodel/model.h). The model's topology is one
// node whose GPUs are linked by NVLink (nvlink), by PCIe through the host bridge (pcie), or by
// NVLink NCCL cannot see because each rank sees only its own GPU (isolated: "NCCL needs to see
// all GPUs on the same node for all NVLink detection to work properly", NVIDIA/nccl#1066). Its
// numbers (rings, bandwidths) are the model's; the formats, caps and choices are NCCL's.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "api.h"
#include "debug.h"
#include "fobmodel/model.h"

namespace fobnccl {
namespace {

// topoPathTypeStr (src/graph/topo.cc:26) of the path between two of the node's GPUs.
const char* intra_type() {
  switch (fobmodel::topology()) {
    case fobmodel::Topology::nvlink:
      return "NVL";
    case fobmodel::Topology::pcie:
      return "PHB";
    case fobmodel::Topology::isolated:
      return "SYS";
  }
  return "SYS";
}

// The ring graph's bandwidth per channel, GB/s: the model's numbers for an NVLink, a PCIe Gen5
// x16 and a CPU-to-CPU link.
double ring_bandwidth() {
  switch (fobmodel::topology()) {
    case fobmodel::Topology::nvlink:
      return 40.0;
    case fobmodel::Topology::pcie:
      return 24.0;
    case fobmodel::Topology::isolated:
      return 10.0;
  }
  return 10.0;
}

// How a rank reaches a peer. P2P needs the peer's GPU in this rank's topology and a path no
// further than PXB: "By default don't use P2P across CPU Host Bridges and further apart"
// (src/graph/paths.cc:318-319), so pcie (PHB) and isolated (the peer's GPU unseen) go through
// shared memory. In one process P2P uses a direct pointer (src/transport/p2p.cc:384), between
// processes CUMEM handles (:393).
std::string transport(const ncclComm& comm, int peer) {
  if (fobmodel::topology() != fobmodel::Topology::nvlink) return "SHM/direct/direct";
  const RankInfo& me = comm.ranks[static_cast<size_t>(comm.engine->rank())];
  return me.pid == comm.ranks[static_cast<size_t>(peer)].pid ? "P2P/direct pointer" : "P2P/CUMEM";
}

// "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/..." (p2p.cc:386, :393), INIT|P2P, or the SHM
// form without the connection index, "Channel %02d : %d[%d] -> %d[%d] via SHM/%s/%s"
// (shm.cc:128), INIT|SHM; printed by the sending side only. connIndex 0: the collectives' ring,
// 1: point-to-point.
void log_channel(const ncclComm& comm, int channel, int conn_index, int peer) {
  const int me = comm.engine->rank();
  const int my_dev = comm.ranks[static_cast<size_t>(me)].nvml_dev;
  const int peer_dev = comm.ranks[static_cast<size_t>(peer)].nvml_dev;
  const std::string via = transport(comm, peer);
  if (via.rfind("SHM", 0) == 0) {
    log::info(log::kInit | log::kShm, "Channel %02d : %d[%d] -> %d[%d] via %s", channel, me, my_dev,
              peer, peer_dev, via.c_str());
  } else {
    log::info(log::kInit | log::kP2p, "Channel %02d/%01d : %d[%d] -> %d[%d] via %s", channel,
              conn_index, me, my_dev, peer, peer_dev, via.c_str());
  }
}

int log2_up(int x) {
  int bits = 0;
  while ((1 << bits) < x) ++bits;
  return bits;
}

int reverse_bits(int x, int bits) {
  int out = 0;
  for (int i = 0; i < bits; ++i) out |= ((x >> i) & 1) << (bits - 1 - i);
  return out;
}

// The p2p channels a send to `peer` uses: on one node the schedule's round for a peer is its
// distance, the round's base channel its bit reversal, and the peer's channels follow it
// (ncclP2pChannelBaseForRound, src/include/channel.h:19-32; ncclP2pChannelForPart,
// src/include/device.h:270).
std::vector<int> p2p_channels(const ncclComm& comm, int peer) {
  const int n = comm.engine->nranks(), round = (peer - comm.engine->rank() + n) % n;
  const int base = reverse_bits(round, log2_up(comm.channels.p2p));
  std::vector<int> out;
  for (int part = 0; part < comm.channels.p2p_per_peer; ++part) {
    out.push_back((base + part) & (comm.channels.p2p - 1));
  }
  return out;
}

uint64_t bytes_sent(const Call& c, int nranks) {
  const uint64_t bytes = c.count * elem_size(c.dtype);
  switch (c.kind) {
    case Kind::send:
      return bytes;
    case Kind::recv:
      return 0;
    default:  // a ring all-gather or reduce-scatter: each rank sends n - 1 blocks
      return bytes * static_cast<uint64_t>(nranks - 1);
  }
}

}  // namespace

void log_topology(const ncclComm& comm) {
  const int me = comm.engine->rank(), n = comm.engine->nranks();
  std::set<std::string> hosts;
  int local_ranks = 0, local_rank = 0;
  const std::string my_host = comm.ranks[static_cast<size_t>(me)].host;
  for (int r = 0; r < n; ++r) {
    const std::string host = comm.ranks[static_cast<size_t>(r)].host;
    hosts.insert(host);
    if (host != my_host) continue;
    if (r < me) ++local_rank;
    ++local_ranks;
  }
  log::info(log::kInit, "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d",
            static_cast<const void*>(&comm), me, n, static_cast<int>(hosts.size()), local_ranks,
            local_rank, 0);
  // The ring graph's search result (src/graph/search.cc:1201), before NCCL's caps: pattern 4
  // (RING), the path types inside the node and to the network (PIX: one node).
  const double bw = ring_bandwidth();
  log::info(log::kGraph,
            "Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s, sameChannels %d", 4, 0,
            kTopologyRings, bw, bw, intra_type(), "PIX", 1);
  // init.cc:1358: the collnet number is nChannels again.
  log::info(log::kInit,
            "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p "
            "channels per peer",
            comm.channels.coll, comm.channels.coll, comm.channels.nvls, comm.channels.p2p,
            comm.channels.p2p_per_peer);
}

// NCCL 2.28 connects at runtime (NCCL_RUNTIME_CONNECT=1): a peer's p2p channels at the group end
// of the first send to it (src/group.cc:135-141), the ring at the first collective
// (ncclCollPreconnect, group.cc:144-199), to the ring's next rank on every collective channel.
void connect(ncclComm& comm, const std::vector<Call>& calls) {
  const int me = comm.engine->rank(), n = comm.engine->nranks();
  std::lock_guard<std::mutex> lock(comm.mu);
  for (const Call& c : calls) {
    if (c.kind == Kind::send && c.peer != me && comm.send_connected.insert(c.peer).second) {
      for (int channel : p2p_channels(comm, c.peer)) log_channel(comm, channel, 1, c.peer);
    }
    const bool collective = c.kind == Kind::all_gather || c.kind == Kind::reduce_scatter;
    if (collective && !comm.ring_connected) {
      comm.ring_connected = true;
      if (n == 1) continue;
      for (int channel = 0; channel < comm.channels.coll; ++channel) {
        log_channel(comm, channel, 0, (me + 1) % n);
      }
    }
  }
}

std::string op_note(ncclComm& comm, const std::vector<Call>& calls) {
  const int n = comm.engine->nranks();
  uint64_t bytes = 0;
  bool all_registered = true;
  for (const Call& c : calls) {
    bytes += bytes_sent(c, n);
    for (const auto& [p, size] : buffers_of(c, n)) {
      all_registered = all_registered && registered(comm, p, size);
    }
  }
  char note[160];
  std::snprintf(note, sizeof note, "comm=%p max_ctas=%d coll_channels=%d bytes=%llu registered=%d",
                static_cast<const void*>(&comm), comm.config.max_ctas, comm.channels.coll,
                static_cast<unsigned long long>(bytes), all_registered ? 1 : 0);
  return note;
}

}  // namespace fobnccl
