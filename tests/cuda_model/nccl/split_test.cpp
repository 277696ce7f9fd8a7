// ncclCommSplit through the C API, ranks as processes: colors and keys make the communicators,
// NCCL_SPLIT_NOCOLOR gives none, a NULL config inherits the parent's resolved configuration and
// a given one takes NCCL's defaults, and the children carry data.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "e2e_util.h"

namespace {

using fobnccl_e2e::all_errs;
using fobnccl_e2e::run_ranks;

// Every rank's `value` gathered over `comm` of `n` ranks, in the communicator's rank order.
std::vector<int32_t> gather(ncclComm_t comm, int32_t value, int n) {
  cudaStream_t stream = nullptr;
  int32_t *send = nullptr, *recv = nullptr;
  std::vector<int32_t> out(static_cast<size_t>(n), -1);
  if (cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0) != cudaSuccess ||
      cudaMalloc(&send, sizeof value) != cudaSuccess ||
      cudaMalloc(&recv, sizeof value * out.size()) != cudaSuccess) {
    return {};
  }
  cudaMemcpy(send, &value, sizeof value, cudaMemcpyHostToDevice);
  if (ncclAllGather(send, recv, 1, ncclInt32, comm, stream) != ncclSuccess) return {};
  cudaStreamSynchronize(stream);
  cudaMemcpy(out.data(), recv, sizeof value * out.size(), cudaMemcpyDeviceToHost);
  return out;
}

ncclComm_t init(const ncclUniqueId& id, int n, int rank, ncclConfig_t* config = nullptr) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitRankConfig(&comm, n, id, rank, config) != ncclSuccess) return nullptr;
  return comm;
}

TEST(NcclSplit, ColorsMakeTheCommunicatorsAndKeysOrderTheirRanks) {
  const auto ranks = run_ranks(4, [](int rank, const ncclUniqueId& id) {
    ncclComm_t parent = init(id, 4, rank);
    if (parent == nullptr) return 10;
    // Even and odd ranks, ordered by descending parent rank.
    ncclComm_t child = nullptr;
    if (ncclCommSplit(parent, rank % 2, -rank, &child, nullptr) != ncclSuccess) return 11;
    if (child == nullptr) return 12;
    const std::vector<int32_t> members = gather(child, rank, 2);
    const std::vector<int32_t> want =
        rank % 2 == 0 ? std::vector<int32_t>{2, 0} : std::vector<int32_t>{3, 1};
    if (members != want) return 13;
    // Equal keys: parent rank order. One color: a duplicate of the parent.
    ncclComm_t dup = nullptr;
    if (ncclCommSplit(parent, 0, 0, &dup, nullptr) != ncclSuccess) return 14;
    if (gather(dup, rank, 4) != std::vector<int32_t>{0, 1, 2, 3}) return 15;
    ncclCommDestroy(dup);
    ncclCommDestroy(child);
    ncclCommDestroy(parent);
    return 0;
  });
  EXPECT_EQ(ranks.codes, (std::vector<int>{0, 0, 0, 0})) << all_errs(ranks);
}

TEST(NcclSplit, NoColorTakesPartButGetsNoCommunicator) {
  const auto ranks = run_ranks(3, [](int rank, const ncclUniqueId& id) {
    ncclComm_t parent = init(id, 3, rank);
    if (parent == nullptr) return 10;
    ncclComm_t child = reinterpret_cast<ncclComm_t>(&rank);
    const int color = rank == 1 ? NCCL_SPLIT_NOCOLOR : 7;
    if (ncclCommSplit(parent, color, 0, &child, nullptr) != ncclSuccess) return 11;
    if (rank == 1) return child == nullptr ? 0 : 12;
    if (child == nullptr) return 13;
    const std::vector<int32_t> want{0, 2};
    return gather(child, rank, 2) == want ? 0 : 14;
  });
  EXPECT_EQ(ranks.codes, (std::vector<int>{0, 0, 0})) << all_errs(ranks);
}

// The config's effect shows in NCCL's channel line: a NULL config keeps the parent's maxCTAs (8),
// a config that leaves maxCTAs undefined gets NCCL's 64 (32 channels on the model's topology).
TEST(NcclSplit, ANullConfigInheritsAGivenConfigTakesTheDefaults) {
  fobnccl_e2e::TempDir dir;
  const std::string log = dir.file("nccl.%p.log");
  const auto ranks = run_ranks(2, [&](int rank, const ncclUniqueId& id) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_FILE", log.c_str(), 1);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.maxCTAs = 8;
    ncclComm_t parent = init(id, 2, rank, &config);
    if (parent == nullptr) return 10;
    ncclComm_t inherited = nullptr, fresh = nullptr;
    if (ncclCommSplit(parent, 0, rank, &inherited, nullptr) != ncclSuccess) return 11;
    ncclConfig_t blocking_only = NCCL_CONFIG_INITIALIZER;
    blocking_only.blocking = 1;
    if (ncclCommSplit(parent, 0, rank, &fresh, &blocking_only) != ncclSuccess) return 12;
    return 0;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{0, 0})) << all_errs(ranks);
  for (int pid : ranks.pids) {
    std::vector<std::string> channels;
    int splits = 0;
    for (const std::string& line : fobnccl_e2e::lines_of(
             fobnccl_e2e::read_file(dir.file("nccl." + std::to_string(pid) + ".log")))) {
      const size_t at = line.find("NCCL INFO ");
      if (at == std::string::npos) continue;
      const std::string text = line.substr(at + 10);
      if (text.find(" coll channels, ") != std::string::npos) channels.push_back(text);
      splits += text.rfind("ncclCommSplit comm ", 0) == 0 &&
                text.find(" - Init COMPLETE") != std::string::npos;
    }
    ASSERT_EQ(channels.size(), 3u);
    EXPECT_EQ(channels[0],
              "8 coll channels, 8 collnet channels, 0 nvls channels, 8 p2p "
              "channels, 8 p2p channels per peer");
    EXPECT_EQ(channels[1], channels[0]);
    EXPECT_EQ(channels[2],
              "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p "
              "channels, 32 p2p channels per peer");
    EXPECT_EQ(splits, 2);
  }
}

TEST(NcclSplit, ArgumentsAreChecked) {
  const auto ranks = run_ranks(1, [](int rank, const ncclUniqueId& id) {
    ncclComm_t parent = init(id, 1, rank);
    if (parent == nullptr) return 10;
    ncclComm_t child = nullptr;
    if (ncclCommSplit(parent, -5, 0, &child, nullptr) != ncclInvalidArgument) return 11;
    if (ncclCommSplit(parent, 0, 0, nullptr, nullptr) != ncclInvalidArgument) return 12;
    ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
    bad.minCTAs = 4;  // with maxCTAs undefined (INT_MIN): min > max, as NCCL compares them
    if (ncclCommSplit(parent, 0, 0, &child, &bad) != ncclInvalidArgument) return 13;
    if (ncclCommSplit(nullptr, 0, 0, &child, nullptr) != ncclInvalidArgument) return 14;
    // A nonblocking config: the child is there, ncclInProgress until asked once.
    ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
    nonblocking.blocking = 0;
    if (ncclCommSplit(parent, 0, 0, &child, &nonblocking) != ncclInProgress) return 15;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(child, &state) != ncclSuccess || state != ncclInProgress) return 16;
    if (ncclCommGetAsyncError(child, &state) != ncclSuccess || state != ncclSuccess) return 17;
    return 0;
  });
  EXPECT_EQ(ranks.codes, (std::vector<int>{0})) << all_errs(ranks);
}

}  // namespace
