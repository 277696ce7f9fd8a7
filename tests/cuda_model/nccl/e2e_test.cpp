// The NCCL model through its C API on the runtime model: device buffers, streams, groups across
// two processes, and a deadlock reported by the runtime's violation().
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace {

// Rank `rank` of 2: exchanges 1000 floats with the other rank, in a group or (deadlocking)
// send-then-receive outside one; with `split`, over a child of the communicator whose keys swap
// the ranks. Returns the process's exit code.
int rank_main(const ncclUniqueId& id, int rank, bool grouped, bool split = false) {
  const size_t n = 1000;
  float *out = nullptr, *in = nullptr;
  cudaStream_t s = nullptr;
  if (cudaMalloc(&out, n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&in, n * sizeof(float)) != cudaSuccess ||
      cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, 0) != cudaSuccess) {
    return 10;
  }
  std::vector<float> host(n, static_cast<float>(rank + 1));
  cudaMemcpy(out, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.maxCTAs = 16;
  if (ncclCommInitRankConfig(&comm, 2, id, rank, &config) != ncclSuccess) return 11;
  ncclComm_t parent = nullptr;
  if (split) {
    parent = comm;
    if (ncclCommSplit(parent, 0, 1 - rank, &comm, nullptr) != ncclSuccess) return 17;
  }
  // The child's keys swap the ranks: this process is its rank 1 - rank, the other one its `rank`.
  const int peer = 1 - (split ? 1 - rank : rank);
  if (grouped) ncclGroupStart();
  if (ncclSend(out, n, ncclFloat32, peer, comm, s) != ncclSuccess) return 12;
  if (ncclRecv(in, n, ncclFloat32, peer, comm, s) != ncclSuccess) return 13;
  if (grouped && ncclGroupEnd() != ncclSuccess) return 14;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 15;
  cudaMemcpy(host.data(), in, n * sizeof(float), cudaMemcpyDeviceToHost);
  ncclResult_t async = ncclInProgress;
  ncclCommGetAsyncError(comm, &async);
  ncclCommDestroy(comm);
  if (parent != nullptr) ncclCommDestroy(parent);
  return host[n - 1] == static_cast<float>(2 - rank) && async == ncclSuccess ? 0 : 16;
}

std::vector<int> run_two(bool grouped, bool split = false) {
  ncclUniqueId id;
  EXPECT_TRUE(fobnccl_e2e::fresh_id(&id));
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("FOB_MODEL_DEADLOCK_S", "2", 1);
      _exit(rank_main(id, r, grouped, split));
    }
    pids.push_back(pid);
  }
  // A hang is killed by ctest's timeout; the model reports a deadlock within seconds.
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

TEST(NcclModelOnRuntime, AGroupedExchangeBetweenTwoProcessesDeliversTheData) {
  EXPECT_EQ(run_two(true), (std::vector<int>{0, 0}));
}

TEST(NcclModelOnRuntime, TheSameExchangeOverACommunicatorSplitFromTheFirst) {
  EXPECT_EQ(run_two(true, true), (std::vector<int>{0, 0}));
}

TEST(NcclModelOnRuntime, TheSameCallsOutsideAGroupAreADeadlockReportedByTheRuntime) {
  const std::vector<int> codes = run_two(false);
  EXPECT_TRUE(codes[0] == 86 || codes[1] == 86) << codes[0] << " " << codes[1];
  EXPECT_NE(codes[0], 0);
  EXPECT_NE(codes[1], 0);
}

// In a process of its own: this test process makes ids and forks, and initialises nothing that
// a rank would inherit (NCCL reads its environment once per process).
int config_and_arguments() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) return 10;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 11;
  ncclConfig_t bad{};
  ncclComm_t comm = nullptr;
  if (ncclCommInitRankConfig(&comm, 1, id, 0, &bad) != ncclInvalidArgument) return 12;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 13;
  float* buf = nullptr;
  if (cudaMalloc(&buf, 64) != cudaSuccess) return 14;
  if (ncclSend(buf, 4, ncclFloat32, 1, comm, nullptr) != ncclInvalidArgument) return 15;
  if (ncclGroupEnd() != ncclInvalidUsage) return 16;
  if (std::string(ncclGetErrorString(ncclRemoteError)) !=
      "remote process exited or there was a network error") {
    return 17;
  }
  return ncclCommAbort(comm) == ncclSuccess ? 0 : 18;
}

TEST(NcclModelOnRuntime, ConfigAndArgumentsAreCheckedAsNcclChecksThem) {
  const pid_t pid = fork();
  if (pid == 0) _exit(config_and_arguments());
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
