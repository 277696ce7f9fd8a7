// The NCCL model through its C API on the runtime model: device buffers, streams, groups across
// two processes, and a deadlock reported by the runtime's violation().
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace {

// Rank `rank` of 2: exchanges 1000 floats with the other rank, in a group or (deadlocking)
// send-then-receive outside one. Returns the process's exit code.
int rank_main(const ncclUniqueId& id, int rank, bool grouped) {
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
  const int peer = 1 - rank;
  if (grouped) ncclGroupStart();
  if (ncclSend(out, n, ncclFloat32, peer, comm, s) != ncclSuccess) return 12;
  if (ncclRecv(in, n, ncclFloat32, peer, comm, s) != ncclSuccess) return 13;
  if (grouped && ncclGroupEnd() != ncclSuccess) return 14;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 15;
  cudaMemcpy(host.data(), in, n * sizeof(float), cudaMemcpyDeviceToHost);
  ncclResult_t async = ncclInProgress;
  ncclCommGetAsyncError(comm, &async);
  ncclCommDestroy(comm);
  return host[n - 1] == static_cast<float>(peer + 1) && async == ncclSuccess ? 0 : 16;
}

std::vector<int> run_two(bool grouped) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("FOB_MODEL_DEADLOCK_S", "2", 1);
      _exit(rank_main(id, r, grouped));
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

TEST(NcclModelOnRuntime, TheSameCallsOutsideAGroupAreADeadlockReportedByTheRuntime) {
  const std::vector<int> codes = run_two(false);
  EXPECT_TRUE(codes[0] == 86 || codes[1] == 86) << codes[0] << " " << codes[1];
  EXPECT_NE(codes[0], 0);
  EXPECT_NE(codes[1], 0);
}

TEST(NcclModelOnRuntime, ConfigAndArgumentsAreCheckedAsNcclChecksThem) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t bad{};
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument);
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  float* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, 64), cudaSuccess);
  EXPECT_EQ(ncclSend(buf, 4, ncclFloat32, 1, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

}  // namespace
