// NCCL's debug log from the model, ranks as processes, each line parsed back with NCCL 2.28.9's
// own format strings: the prefix, the Init lines, the topology and channel lines, the lazy
// connections, the environment's overrides, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE, WARN lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace {

using fobnccl_e2e::all_errs;
using fobnccl_e2e::read_file;
using fobnccl_e2e::run_ranks;

// One rank's log: the INFO messages (prefix checked and cut) and the raw text.
struct Log {
  std::vector<std::string> info;
  std::string text;
};

Log read_log(const std::string& path, int pid) {
  Log log;
  log.text = read_file(path);
  for (const std::string& line : fobnccl_e2e::lines_of(log.text)) {
    char host[256];
    int line_pid = 0, tid = 0, dev = 0, used = 0;
    if (std::sscanf(line.c_str(), "%255[^:]:%d:%d [%d] NCCL INFO %n", host, &line_pid, &tid, &dev,
                    &used) == 4 &&
        used > 0) {
      EXPECT_EQ(line_pid, pid) << line;
      log.info.push_back(line.substr(static_cast<size_t>(used)));
    }
  }
  return log;
}

std::vector<std::string> starting(const Log& log, const std::string& head) {
  std::vector<std::string> out;
  for (const std::string& m : log.info) {
    if (m.rfind(head, 0) == 0) out.push_back(m);
  }
  return out;
}

// Two ranks on devices 0 and 1: init with maxCTAs 16, a grouped exchange (p2p connections),
// an all-gather (the ring), a registration.
int exchange(int rank, const ncclUniqueId& id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.maxCTAs = 16;
  ncclComm_t comm = nullptr;
  if (ncclCommInitRankConfig(&comm, 2, id, rank, &config) != ncclSuccess) return 10;
  float *a = nullptr, *b = nullptr;
  cudaMalloc(&a, 4096);
  cudaMalloc(&b, 8192);
  void* handle = nullptr;
  if (ncclCommRegister(comm, a, 4096, &handle) != ncclSuccess) return 11;
  for (int twice = 0; twice < 2; ++twice) {
    ncclGroupStart();
    ncclSend(a, 16, ncclFloat32, 1 - rank, comm, nullptr);
    ncclRecv(b, 16, ncclFloat32, 1 - rank, comm, nullptr);
    if (ncclGroupEnd() != ncclSuccess) return 12;
  }
  if (ncclAllGather(a, b, 4, ncclFloat32, comm, nullptr) != ncclSuccess) return 13;
  cudaDeviceSynchronize();
  ncclCommDeregister(comm, handle);
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 14;
}

// The Init START/COMPLETE and "comm ... nRanks" lines of rank `rank` of 2 on device `rank`; the
// commId its START line gives, in *comm_id.
void check_init_lines(const Log& log, int rank, unsigned long long* comm_id) {
  void *comm = nullptr, *comm2 = nullptr;
  int r = -1, n = 0, dev = -1, nvml = -1, r2 = -1, n2 = 0, nodes = 0, local = 0, local_rank = -1,
      mnnvl = -1;
  long bus = 0;
  const auto start = starting(log, "ncclCommInitRankConfig comm ");
  ASSERT_EQ(start.size(), 2u);
  ASSERT_EQ(std::sscanf(start[0].c_str(),
                        "ncclCommInitRankConfig comm %p rank %d nranks %d cudaDev %d nvmlDev %d "
                        "busId %lx commId 0x%llx - Init START",
                        &comm, &r, &n, &dev, &nvml, &bus, comm_id),
            7)
      << start[0];
  EXPECT_EQ(r, rank);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(dev, rank);
  EXPECT_EQ(nvml, rank);
  EXPECT_EQ(bus, 0x18000 + 0x10000 * rank);  // "0000:18:00.0" and "0000:28:00.0"
  EXPECT_NE(start[1].find(" - Init COMPLETE"), std::string::npos);
  EXPECT_EQ(start[1].substr(0, start[1].find(" - ")), start[0].substr(0, start[0].find(" - ")));
  const auto topo = starting(log, "comm ");
  ASSERT_EQ(topo.size(), 2u);  // the topology line, then "... - Destroy COMPLETE"
  ASSERT_EQ(std::sscanf(topo[0].c_str(),
                        "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d",
                        &comm2, &r2, &n2, &nodes, &local, &local_rank, &mnnvl),
            7);
  EXPECT_EQ(comm2, comm);
  EXPECT_EQ(r2, rank);
  EXPECT_EQ(nodes, 1);
  EXPECT_EQ(local, 2);
  EXPECT_EQ(local_rank, rank);
  EXPECT_EQ(mnnvl, 0);
  char destroyed[160];
  std::snprintf(destroyed, sizeof destroyed,
                "comm %p rank %d nranks 2 cudaDev %d busId %lx - Destroy COMPLETE", comm, rank,
                rank, bus);
  EXPECT_EQ(topo[1], destroyed);
}

// The p2p connections: once (the second exchange connects nothing), on the sending side, one per
// p2p channel of the peer; then the ring's 16 collective channels.
void check_connections(const Log& log, int rank) {
  std::map<int, int> conn;
  for (const std::string& m : starting(log, "Channel ")) {
    int channel = -1, index = -1, from = -1, from_dev = -1, to = -1, to_dev = -1, used = 0;
    ASSERT_EQ(std::sscanf(m.c_str(), "Channel %d/%d : %d[%d] -> %d[%d] via P2P/CUMEM%n", &channel,
                          &index, &from, &from_dev, &to, &to_dev, &used),
              6)
        << m;
    EXPECT_EQ(static_cast<size_t>(used), m.size()) << m;
    EXPECT_EQ(from, rank);
    EXPECT_EQ(from_dev, rank);
    EXPECT_EQ(to, 1 - rank);
    EXPECT_EQ(to_dev, 1 - rank);
    EXPECT_LT(channel, 16);
    ++conn[index];
  }
  EXPECT_EQ(conn[1], 16);
  EXPECT_EQ(conn[0], 16);
}

TEST(NcclLog, InitTopologyAndConnectionLinesInNcclsFormats) {
  fobnccl_e2e::TempDir dir;
  const std::string pattern = dir.file("nccl.%h.%p.%%.log");
  const auto ranks = run_ranks(2, [&](int rank, const ncclUniqueId& id) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,ENV,P2P,REG", 1);
    setenv("NCCL_DEBUG_FILE", pattern.c_str(), 1);
    return exchange(rank, id);
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0, 0})) << all_errs(ranks);
  char host[256] = "";
  gethostname(host, sizeof host);
  const std::string short_host = std::string(host).substr(0, std::string(host).find('.'));
  unsigned long long comm_ids[2] = {0, 0};
  for (int rank = 0; rank < 2; ++rank) {
    const int pid = ranks.pids[static_cast<size_t>(rank)];
    // %h the short host name, %p the pid, %% a percent sign.
    const Log log =
        read_log(dir.file("nccl." + short_host + "." + std::to_string(pid) + ".%.log"), pid);
    ASSERT_FALSE(log.info.empty()) << "rank " << rank;
    EXPECT_EQ(log.info[0], "NCCL version 2.28.9+cuda13.0");
    EXPECT_EQ(starting(log, "Comm config Max CTAs set to 16").size(), 1u);
    check_init_lines(log, rank, &comm_ids[rank]);
    const auto pattern4 = starting(log, "Pattern ");
    ASSERT_EQ(pattern4.size(), 1u);
    EXPECT_EQ(pattern4[0],
              "Pattern 4, crossNic 0, nChannels 32, bw 40.000000/40.000000, type NVL/PIX, "
              "sameChannels 1");
    EXPECT_EQ(starting(log,
                       "16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p "
                       "channels, 16 p2p channels per peer")
                  .size(),
              1u);
    check_connections(log, rank);
    EXPECT_EQ(starting(log, "register comm ").size(), 1u);
  }
  EXPECT_EQ(comm_ids[0], comm_ids[1]);
}

TEST(NcclLog, TheEnvironmentOverridesTheConfigAndTheChannelsFollow) {
  fobnccl_e2e::TempDir dir;
  const std::string file = dir.file("nccl.%p.log");
  const auto ranks = run_ranks(2, [&](int rank, const ncclUniqueId& id) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
    setenv("NCCL_MAX_CTAS", "6", 1);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.maxCTAs = 16;
    ncclComm_t comm = nullptr;
    return ncclCommInitRankConfig(&comm, 2, id, rank, &config) == ncclSuccess ? 0 : 10;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0, 0})) << all_errs(ranks);
  for (int pid : ranks.pids) {
    const Log log = read_log(dir.file("nccl." + std::to_string(pid) + ".log"), pid);
    EXPECT_EQ(starting(log, "NCCL_MAX_CTAS set by environment to 6.").size(), 1u) << log.text;
    EXPECT_EQ(starting(log, "Comm config maxCTAs reset to NCCL_MAX_CTAS=6").size(), 1u);
    // maxCTAs 6 is no power of two: 6 collective channels, 8 p2p channels.
    EXPECT_EQ(starting(log,
                       "6 coll channels, 6 collnet channels, 0 nvls channels, 8 p2p "
                       "channels, 8 p2p channels per peer")
                  .size(),
              1u)
        << log.text;
    // The default subsystems: INIT, BOOTSTRAP, ENV; not GRAPH.
    EXPECT_TRUE(starting(log, "Pattern ").empty());
  }
}

TEST(NcclLog, ChannelCapsSubsystemsAndTopologies) {
  fobnccl_e2e::TempDir dir;
  const std::string file = dir.file("nccl.%p.log");
  const auto ranks = run_ranks(4, [&](int rank, const ncclUniqueId& id) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "^ENV,BOOTSTRAP", 1);
    setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
    setenv("NCCL_MAX_NCHANNELS", "12", 1);
    setenv("FOB_MODEL_TOPOLOGY", "isolated", 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 4, id, rank) != ncclSuccess) return 10;
    float* a = nullptr;
    cudaMalloc(&a, 64);
    ncclGroupStart();
    ncclSend(a, 4, ncclFloat32, (rank + 1) % 4, comm, nullptr);
    ncclRecv(a, 4, ncclFloat32, (rank + 3) % 4, comm, nullptr);
    ncclGroupEnd();
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 11;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0, 0, 0, 0})) << all_errs(ranks);
  for (int rank = 0; rank < 4; ++rank) {
    const int pid = ranks.pids[static_cast<size_t>(rank)];
    const Log log = read_log(dir.file("nccl." + std::to_string(pid) + ".log"), pid);
    // ENV excluded: no "set by environment" line; GRAPH included by "^".
    EXPECT_TRUE(starting(log, "NCCL_MAX_NCHANNELS").empty()) << log.text;
    ASSERT_EQ(starting(log, "Pattern ").size(), 1u);
    EXPECT_NE(starting(log, "Pattern ")[0].find("type SYS/PIX"), std::string::npos);
    // 12 collective channels; 16 p2p; 16 / 3 ranks -> 8 per peer (pow2Up of 5).
    EXPECT_EQ(starting(log,
                       "12 coll channels, 12 collnet channels, 0 nvls channels, 16 p2p "
                       "channels, 8 p2p channels per peer")
                  .size(),
              1u)
        << log.text;
    // Rank r sends to r + 1 only: distance 1, base channel reverse(1) = 8: channels 8..15, via
    // shared memory (the peer's GPU is not in this rank's topology).
    const auto conn = starting(log, "Channel ");
    ASSERT_EQ(conn.size(), 8u) << log.text;
    const int next = (rank + 1) % 4;
    for (size_t i = 0; i < conn.size(); ++i) {
      char want[96];
      std::snprintf(want, sizeof want, "Channel %02d : %d[%d] -> %d[%d] via SHM/direct/direct",
                    static_cast<int>(8 + i), rank, rank, next, next);
      EXPECT_EQ(conn[i], want);
    }
  }
}

// NCCL reads its logging environment at the first call that logs, ncclGetUniqueId included:
// set later, it changes nothing.
TEST(NcclLog, TheEnvironmentIsReadOnceAtTheFirstCallThatLogs) {
  fobnccl_e2e::TempDir dir;
  const std::string file = dir.file("late.log");
  const auto ranks = run_ranks(1, [&](int rank, const ncclUniqueId& id) {
    ncclUniqueId unused;
    ncclGetUniqueId(&unused);
    fobnccl_e2e::remove_rendezvous(unused);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
    ncclComm_t comm = nullptr;
    return ncclCommInitRank(&comm, 1, id, rank) == ncclSuccess ? 0 : 10;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0})) << all_errs(ranks);
  EXPECT_EQ(access(file.c_str(), F_OK), -1);
}

// pcie: the GPUs meet at the host bridge (PHB), where NCCL does not use P2P by default
// (src/graph/paths.cc:318-319): shared memory.
TEST(NcclLog, OnPcieTheRingIsPhbAndTheTransportSharedMemory) {
  fobnccl_e2e::TempDir dir;
  const std::string file = dir.file("nccl.%p.log");
  const auto ranks = run_ranks(2, [&](int rank, const ncclUniqueId& id) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "GRAPH,SHM", 1);
    setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
    setenv("FOB_MODEL_TOPOLOGY", "pcie", 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 10;
    float* a = nullptr;
    cudaMalloc(&a, 64);
    ncclAllGather(a, a, 4, ncclFloat32, comm, nullptr);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 11;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0, 0})) << all_errs(ranks);
  const int pid = ranks.pids[1];
  const Log log = read_log(dir.file("nccl." + std::to_string(pid) + ".log"), pid);
  ASSERT_EQ(starting(log, "Pattern ").size(), 1u) << log.text;
  EXPECT_EQ(starting(log, "Pattern ")[0],
            "Pattern 4, crossNic 0, nChannels 32, bw 24.000000/24.000000, type PHB/PIX, "
            "sameChannels 1");
  const auto conn = starting(log, "Channel ");
  ASSERT_EQ(conn.size(), 32u) << log.text;
  EXPECT_EQ(conn[31], "Channel 31 : 1[1] -> 0[0] via SHM/direct/direct");
}

TEST(NcclLog, WarnLinesAndTheWarnLevel) {
  fobnccl_e2e::TempDir dir;
  const std::string file = dir.file("nccl.%p.log");
  const auto ranks = run_ranks(1, [&](int rank, const ncclUniqueId& id) {
    setenv("NCCL_DEBUG", "WARN", 1);
    setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 1, id, rank) != ncclSuccess) return 10;
    float* a = nullptr;
    cudaMalloc(&a, 64);
    return ncclSend(a, 4, ncclFloat32, 3, comm, nullptr) == ncclInvalidArgument ? 0 : 11;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0})) << all_errs(ranks);
  const std::string text = read_file(dir.file("nccl." + std::to_string(ranks.pids[0]) + ".log"));
  // VERSION on rank 0, no INFO line, the WARN after an empty line with its date and source.
  const auto lines = fobnccl_e2e::lines_of(text);
  ASSERT_EQ(lines.size(), 3u) << text;
  EXPECT_EQ(lines[0], "NCCL version 2.28.9+cuda13.0");
  EXPECT_EQ(lines[1], "");
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, pid = 0, tid = 0, dev = -1,
      line = 0, used = 0;
  char host[256], file_name[256];
  ASSERT_EQ(
      std::sscanf(lines[2].c_str(),
                  "[%d-%d-%d %d:%d:%d] %255[^:]:%d:%d [%d] %255[^:]:%d NCCL WARN %n", &year, &month,
                  &day, &hour, &minute, &second, host, &pid, &tid, &dev, file_name, &line, &used),
      12)
      << lines[2];
  EXPECT_EQ(pid, ranks.pids[0]);
  EXPECT_EQ(dev, 0);
  EXPECT_STREQ(file_name, "nccl_api.cpp");
  EXPECT_EQ(lines[2].substr(static_cast<size_t>(used)), "ncclSend: peer 3 is out of range [0, 1)");
  // Without NCCL_DEBUG nothing is logged, and the model says it on stderr.
  const auto quiet = run_ranks(1, [](int rank, const ncclUniqueId& id) {
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 1, id, rank) != ncclSuccess) return 10;
    return ncclSend(nullptr, 4, ncclFloat32, 0, comm, nullptr) == ncclInvalidArgument ? 0 : 11;
  });
  ASSERT_EQ(quiet.codes, (std::vector<int>{0})) << all_errs(quiet);
  EXPECT_NE(quiet.errs[0].find("[cuda model nccl] WARN ncclSend: a buffer is NULL"),
            std::string::npos)
      << quiet.errs[0];
}

}  // namespace
