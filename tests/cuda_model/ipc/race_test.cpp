// The cross-process race detector: a copy by one process into another's exported buffer and the
// owner's read of it race unless a flag orders them — the copy, then cuStreamWriteValue32 on the
// copying stream, and cuStreamWaitValue32 on the reading stream before the read.
#include <gtest/gtest.h>

#include <vector>

#include "ipc_test_util.h"

namespace {

using fobipc_test::Channel;
using fobipc_test::driver;
using fobipc_test::Ranks;
using fobipc_test::run_ranks;
using fobipc_test::word;

constexpr size_t kBytes = 4096;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

cudaStream_t new_stream() {
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0);
  return stream;
}

// How the two ranks order the copy into rank 0's buffer and rank 0's read of it.
enum class Order {
  flag,            // copy, write the flag; wait for it, read
  host_only,       // copy, synchronise, tell rank 0 through a pipe; read
  flag_too_early,  // write the flag, then copy; wait for it, read
  two_iterations,  // the flag protocol twice over the same buffer, the second copy after a
                   // clear-to-send flag from the reader
};

// Rank 0: exports a buffer and a flag block (word 0: "arrived", word 1 is rank 1's), reads the
// buffer after the order's synchronisation.
int owner(const Channel& channel, Order order) {
  void* data = nullptr;
  void* flags = nullptr;
  cudaIpcMemHandle_t handles[2];
  cudaStream_t stream = new_stream();
  if (cudaMalloc(&data, kBytes) != 0 || cudaMalloc(&flags, 256) != 0 ||
      cudaMemset(flags, 0, 256) != 0 || cudaDeviceSynchronize() != 0 ||
      cudaIpcGetMemHandle(&handles[0], data) != 0 || cudaIpcGetMemHandle(&handles[1], flags) != 0 ||
      !channel.send(handles, sizeof handles)) {
    return 10;
  }
  const int rounds = order == Order::two_iterations ? 2 : 1;
  std::vector<char> out(kBytes);
  for (int round = 1; round <= rounds; ++round) {
    if (order == Order::host_only && !channel.await('c')) return 11;
    if (order != Order::host_only) driver().wait(stream, word(flags), round, 0);
    if (cudaMemcpyAsync(out.data(), data, kBytes, cudaMemcpyDeviceToHost, stream) != 0) return 12;
    // Clear to send the next round, after the read (stream order).
    if (round < rounds) driver().write(stream, word(flags, 1), round, 0);
  }
  cudaStreamSynchronize(stream);
  if (!channel.signal('r') || !channel.await('x')) return 13;
  return 0;
}

// Rank 1: copies into rank 0's buffer and flags it as the order says.
int copier(const Channel& channel, Order order) {
  cudaIpcMemHandle_t handles[2];
  void* data = nullptr;
  void* flags = nullptr;
  void* src = nullptr;
  cudaStream_t stream = new_stream();
  if (!channel.receive(handles, sizeof handles) ||
      cudaIpcOpenMemHandle(&data, handles[0], cudaIpcMemLazyEnablePeerAccess) != 0 ||
      cudaIpcOpenMemHandle(&flags, handles[1], cudaIpcMemLazyEnablePeerAccess) != 0 ||
      cudaMalloc(&src, kBytes) != 0 || cudaMemset(src, 5, kBytes) != 0 ||
      cudaDeviceSynchronize() != 0) {
    return 20;
  }
  const int rounds = order == Order::two_iterations ? 2 : 1;
  for (int round = 1; round <= rounds; ++round) {
    if (round > 1) driver().wait(stream, word(flags, 1), round - 1, 0);
    if (order == Order::flag_too_early) driver().write(stream, word(flags), round, 0);
    cudaMemcpyAsync(data, src, kBytes, cudaMemcpyDeviceToDevice, stream);
    if (order == Order::flag || order == Order::two_iterations) {
      driver().write(stream, word(flags), round, 0);
    }
  }
  cudaStreamSynchronize(stream);
  if (order == Order::host_only && !channel.signal('c')) return 21;
  if (!channel.await('r')) return 22;
  cudaIpcCloseMemHandle(data);
  cudaIpcCloseMemHandle(flags);
  return channel.signal('x') ? 0 : 23;
}

Ranks run(Order order) {
  return run_ranks([order](int rank, const Channel& channel) {
    return rank == 0 ? owner(channel, order) : copier(channel, order);
  });
}

TEST(IpcRace, ACopyFlaggedOnItsStreamAndAwaitedBeforeTheReadIsClean) {
  for (const Order order : {Order::flag, Order::two_iterations}) {
    const Ranks ranks = run(order);
    EXPECT_EQ(ranks.codes[0], 0) << ranks.all();
    EXPECT_EQ(ranks.codes[1], 0) << ranks.all();
    EXPECT_FALSE(has(ranks.errs[0] + ranks.errs[1], "[cuda model]")) << ranks.all();
  }
}

// Every run: the read comes after the copy in time (the pipe), but nothing the model can see
// orders them, as nothing a GPU honours would.
TEST(IpcRace, ACopyOrderedOnlyThroughTheHostIsARaceNamingBothProcesses) {
  for (int run_number = 0; run_number < 3; ++run_number) {
    const Ranks ranks = run(Order::host_only);
    EXPECT_EQ(ranks.codes[0], 86) << ranks.all();
    const std::string& err = ranks.errs[0];
    EXPECT_TRUE(has(err, "race: cudaMemcpyAsync (peer) (process ")) << ranks.all();
    EXPECT_TRUE(has(err, "writes offset 0 of device 0 memory of process ")) << ranks.all();
    EXPECT_TRUE(has(err, "and cudaMemcpyAsync (process ")) << ranks.all();
    EXPECT_TRUE(has(err, "no flag wait")) << ranks.all();
  }
}

// The flag written before the copy orders nothing of it: whichever of the copy and the read runs
// second reports the pair.
TEST(IpcRace, AFlagWrittenBeforeTheCopyIsARace) {
  const Ranks ranks = run(Order::flag_too_early);
  EXPECT_TRUE(has(ranks.errs[0] + ranks.errs[1], "race: cudaMemcpyAsync")) << ranks.all();
  EXPECT_TRUE(ranks.codes[0] == 86 || ranks.codes[1] == 86) << ranks.all();
}

}  // namespace
