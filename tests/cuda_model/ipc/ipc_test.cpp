// CUDA IPC on the runtime model between two processes: a handle opened, copied into and
// flagged, the peer reading what was copied; the rules "ipc" (its own handle, cudaFree of
// imported memory, the exporter freeing memory still open), "memcheck" and "memcpy-kind" on
// imported memory, a flag never written as "deadlock" naming the word's owner, reference counts,
// and the copy-engine attribute.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fobmodel/model.h"
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

// Rank 0 allocates and exports `kBytes` of data and a flag block and sends both handles.
struct Exported {
  void* data = nullptr;
  void* flags = nullptr;
  bool ok = false;
};
Exported export_pair(const Channel& channel) {
  Exported out;
  cudaIpcMemHandle_t handles[2];
  out.ok = cudaMalloc(&out.data, kBytes) == cudaSuccess &&
           cudaMalloc(&out.flags, 256) == cudaSuccess &&
           cudaMemset(out.data, 0, kBytes) == cudaSuccess &&
           cudaMemset(out.flags, 0, 256) == cudaSuccess &&
           cudaIpcGetMemHandle(&handles[0], out.data) == cudaSuccess &&
           cudaIpcGetMemHandle(&handles[1], out.flags) == cudaSuccess &&
           cudaDeviceSynchronize() == cudaSuccess && channel.send(handles, sizeof handles);
  return out;
}

// Rank 1 receives and opens them.
struct Imported {
  void* data = nullptr;
  void* flags = nullptr;
  bool ok = false;
};
Imported import_pair(const Channel& channel) {
  Imported out;
  cudaIpcMemHandle_t handles[2];
  out.ok =
      channel.receive(handles, sizeof handles) &&
      cudaIpcOpenMemHandle(&out.data, handles[0], cudaIpcMemLazyEnablePeerAccess) == cudaSuccess &&
      cudaIpcOpenMemHandle(&out.flags, handles[1], cudaIpcMemLazyEnablePeerAccess) == cudaSuccess;
  return out;
}

cudaStream_t new_stream() {
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0);
  return stream;
}

// The receiving side of the flag protocol: waits for flag 0 to reach 1 on a stream, then copies
// the data out on that stream and checks it.
int receive_and_check(const Channel& channel, bool wait) {
  const Exported mine = export_pair(channel);
  cudaStream_t stream = new_stream();
  if (!mine.ok || stream == nullptr) return 10;
  if (wait && driver().wait(stream, word(mine.flags), 1, CU_STREAM_WAIT_VALUE_GEQ) != 0) return 11;
  if (!wait && !channel.await('c')) return 12;  // a host hand-off the model cannot see
  std::vector<unsigned char> out(kBytes);
  if (cudaMemcpyAsync(out.data(), mine.data, kBytes, cudaMemcpyDeviceToHost, stream) != 0 ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    return 13;
  }
  for (size_t i = 0; i < kBytes; ++i) {
    if (out[i] != static_cast<unsigned char>(i * 7)) return 14;
  }
  if (!channel.signal('r') || !channel.await('x')) return 15;
  return cudaFree(mine.data) == cudaSuccess && cudaFree(mine.flags) == cudaSuccess ? 0 : 16;
}

// The sending side: copies into the peer's buffer and writes its flag on the same stream.
int send_and_flag(const Channel& channel, bool tell_host) {
  const Imported peer = import_pair(channel);
  cudaStream_t stream = new_stream();
  void* src = nullptr;
  if (!peer.ok || stream == nullptr || cudaMalloc(&src, kBytes) != cudaSuccess) return 20;
  std::vector<unsigned char> pattern(kBytes);
  for (size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<unsigned char>(i * 7);
  if (cudaMemcpy(src, pattern.data(), kBytes, cudaMemcpyHostToDevice) != cudaSuccess) return 21;
  if (cudaMemcpyAsync(peer.data, src, kBytes, cudaMemcpyDeviceToDevice, stream) != 0) return 22;
  if (driver().write(stream, word(peer.flags), 1, CU_STREAM_WRITE_VALUE_DEFAULT) != 0) return 23;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 24;
  if (tell_host && !channel.signal('c')) return 25;
  if (!channel.await('r')) return 26;
  if (cudaIpcCloseMemHandle(peer.data) != cudaSuccess ||
      cudaIpcCloseMemHandle(peer.flags) != cudaSuccess) {
    return 27;
  }
  return channel.signal('x') ? 0 : 28;
}

TEST(Ipc, CopyThenFlagIsSeenByThePeerAndIsClean) {
  const Ranks ranks = run_ranks([](int rank, const Channel& channel) {
    return rank == 0 ? receive_and_check(channel, true) : send_and_flag(channel, false);
  });
  EXPECT_EQ(ranks.codes[0], 0) << ranks.all();
  EXPECT_EQ(ranks.codes[1], 0) << ranks.all();
  EXPECT_FALSE(has(ranks.errs[0] + ranks.errs[1], "[cuda model]")) << ranks.all();
}

TEST(Ipc, ACopyIntoImportedMemoryIsAPeerCopyInTheOpLog) {
  char dir[] = "/tmp/fobipc-log-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/ops";
  const Ranks ranks = run_ranks([&](int rank, const Channel& channel) {
    if (rank == 1) setenv("FOB_MODEL_OP_LOG", log.c_str(), 1);
    return rank == 0 ? receive_and_check(channel, true) : send_and_flag(channel, false);
  });
  ASSERT_EQ(ranks.codes[1], 0) << ranks.all();
  const std::string text = fobipc_test::read_file(log);
  unlink(log.c_str());
  rmdir(dir);
  EXPECT_TRUE(has(text, "name=\"cudaMemcpyAsync (peer)\"")) << text;
  EXPECT_TRUE(has(text, "note=\"engine=copy peer=")) << text;
  EXPECT_TRUE(has(text, "bytes=4096\"")) << text;
}

// Opens the exporter's data handle in rank 1, runs `use` on it, and keeps rank 0 alive (and its
// allocation exported) until rank 1 ends.
Ranks with_import(const std::function<int(void*)>& use) {
  return run_ranks([&](int rank, const Channel& channel) {
    if (rank == 0) {
      const Exported mine = export_pair(channel);
      if (!mine.ok) return 10;
      channel.await('x');
      return 0;
    }
    const Imported peer = import_pair(channel);
    return peer.ok ? use(peer.data) : 20;
  });
}

TEST(Ipc, OpeningTheSameHandleTwiceCountsReferences) {
  const Ranks ranks = run_ranks([](int rank, const Channel& channel) {
    if (rank == 0) {
      const Exported mine = export_pair(channel);
      channel.await('x');
      return mine.ok ? 0 : 10;
    }
    cudaIpcMemHandle_t handles[2];
    void* first = nullptr;
    void* second = nullptr;
    if (!channel.receive(handles, sizeof handles)) return 20;
    if (cudaIpcOpenMemHandle(&first, handles[0], cudaIpcMemLazyEnablePeerAccess) != 0) return 21;
    if (cudaIpcOpenMemHandle(&second, handles[0], cudaIpcMemLazyEnablePeerAccess) != 0) return 22;
    if (first != second) return 23;
    if (cudaIpcCloseMemHandle(first) != cudaSuccess) return 24;
    // Still open once: the memory is still mapped and usable.
    if (cudaMemset(first, 1, kBytes) != cudaSuccess || cudaDeviceSynchronize() != 0) return 25;
    if (cudaIpcCloseMemHandle(first) != cudaSuccess) return 26;
    if (cudaIpcCloseMemHandle(first) != cudaErrorInvalidValue) return 27;
    cudaGetLastError();
    // Flags other than cudaIpcMemLazyEnablePeerAccess; a handle that is not one.
    if (cudaIpcOpenMemHandle(&first, handles[0], 0) != cudaErrorInvalidValue) return 28;
    cudaIpcMemHandle_t junk{};
    if (cudaIpcOpenMemHandle(&first, junk, cudaIpcMemLazyEnablePeerAccess) !=
        cudaErrorInvalidValue) {
      return 29;
    }
    return channel.signal('x') ? 0 : 30;
  });
  EXPECT_EQ(ranks.codes[0], 0) << ranks.all();
  EXPECT_EQ(ranks.codes[1], 0) << ranks.all();
}

TEST(Ipc, OpeningItsOwnHandleIsTheRuleIpc) {
  EXPECT_EXIT(
      {
        void* data = nullptr;
        cudaMalloc(&data, kBytes);
        cudaIpcMemHandle_t handle;
        if (cudaIpcGetMemHandle(&handle, static_cast<char*>(data) + 100) != cudaSuccess) {
          std::exit(3);
        }
        void* opened = nullptr;
        cudaIpcOpenMemHandle(&opened, handle, cudaIpcMemLazyEnablePeerAccess);
        std::exit(0);
      },
      ::testing::ExitedWithCode(86), "ipc: cudaIpcOpenMemHandle on process .*own IPC handle");
}

TEST(Ipc, OnlyLocalDeviceMemoryIsExported) {
  EXPECT_EXIT(
      {
        void* pinned = nullptr;
        cudaMallocHost(&pinned, 64);
        cudaIpcMemHandle_t handle;
        int stack = 0;
        const bool refused = cudaIpcGetMemHandle(&handle, pinned) == cudaErrorInvalidValue &&
                             cudaIpcGetMemHandle(&handle, &stack) == cudaErrorInvalidValue &&
                             cudaIpcGetMemHandle(nullptr, pinned) == cudaErrorInvalidValue;
        std::exit(refused ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Ipc, FreeingImportedMemoryIsTheRuleIpc) {
  const Ranks ranks = with_import([](void* data) { return cudaFree(data) == 0 ? 1 : 2; });
  EXPECT_EQ(ranks.codes[1], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "ipc: cudaFree(")) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "close it with cudaIpcCloseMemHandle")) << ranks.all();
}

TEST(Ipc, TheExporterFreeingMemoryStillOpenIsTheRuleIpc) {
  const Ranks ranks = run_ranks([](int rank, const Channel& channel) {
    if (rank == 0) {
      const Exported mine = export_pair(channel);
      if (!mine.ok || !channel.await('o')) return 10;
      cudaFree(mine.data);
      return 0;
    }
    const Imported peer = import_pair(channel);
    if (!peer.ok || !channel.signal('o')) return 20;
    channel.await('x');  // until rank 0 has ended
    return 0;
  });
  EXPECT_EQ(ranks.codes[0], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[0],
                  "still has open (cudaIpcOpenMemHandle without "
                  "cudaIpcCloseMemHandle)"))
      << ranks.all();
  EXPECT_TRUE(has(ranks.errs[0], "before calling cudaIpcCloseMemHandle in the importing context"))
      << ranks.all();
}

TEST(Ipc, OpeningFreedMemoryIsTheRuleIpc) {
  const Ranks ranks = run_ranks([](int rank, const Channel& channel) {
    if (rank == 0) {
      const Exported mine = export_pair(channel);
      if (!mine.ok || cudaFree(mine.data) != cudaSuccess || !channel.signal('f')) return 10;
      channel.await('x');
      return 0;
    }
    cudaIpcMemHandle_t handles[2];
    void* data = nullptr;
    if (!channel.receive(handles, sizeof handles) || !channel.await('f')) return 20;
    cudaIpcOpenMemHandle(&data, handles[0], cudaIpcMemLazyEnablePeerAccess);
    return 0;
  });
  EXPECT_EQ(ranks.codes[1], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "names memory the exporter has freed")) << ranks.all();
}

TEST(Ipc, ACopyPastTheImportedAllocationIsMemcheck) {
  const Ranks ranks = with_import([](void* data) {
    void* src = nullptr;
    cudaMalloc(&src, 2 * kBytes);
    cudaMemcpyAsync(data, src, kBytes + 1, cudaMemcpyDeviceToDevice, nullptr);
    return 0;
  });
  EXPECT_EQ(ranks.codes[1], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "memcheck: cudaMemcpyAsync")) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "runs past the end of the 4096-byte allocation")) << ranks.all();
}

TEST(Ipc, AHostCopyIntoImportedMemoryIsMemcpyKind) {
  const Ranks ranks = with_import([](void* data) {
    std::vector<char> host(16);
    cudaMemcpyAsync(data, host.data(), host.size(), cudaMemcpyHostToDevice, nullptr);
    return 0;
  });
  EXPECT_EQ(ranks.codes[1], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "memcpy-kind: cudaMemcpyAsync")) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "cudaMemcpyHostToDevice into")) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "imported with cudaIpcOpenMemHandle")) << ranks.all();
}

TEST(Ipc, StridedAndPeerCopiesIntoImportedMemoryWork) {
  const Ranks ranks = with_import([](void* data) {
    void* src = nullptr;
    int device = -1;
    if (cudaMalloc(&src, kBytes) != cudaSuccess) return 1;
    if (fobmodel::memory_of(data, &device) != fobmodel::Memory::device || device != 0) return 2;
    if (cudaMemset(src, 3, kBytes) != cudaSuccess) return 3;
    // 16 rows of 64 bytes, 256 apart, into the peer's buffer.
    if (cudaMemcpy2DAsync(data, 256, src, 64, 64, 16, cudaMemcpyDeviceToDevice, nullptr) != 0) {
      return 4;
    }
    if (cudaMemcpyPeerAsync(data, 0, src, 1, 128, nullptr) != cudaSuccess) return 5;
    std::vector<unsigned char> back(kBytes);
    // Device to host from imported memory is allowed.
    if (cudaMemcpy(back.data(), data, kBytes, cudaMemcpyDeviceToHost) != cudaSuccess) return 6;
    return back[0] == 3 && back[256 + 63] == 3 && back[256 + 64] == 0 ? 0 : 7;
  });
  EXPECT_EQ(ranks.codes[1], 0) << ranks.all();
}

TEST(Ipc, APeerCopyNamingTheWrongDeviceIsMemcpyKind) {
  const Ranks ranks = with_import([](void* data) {
    void* src = nullptr;
    cudaMalloc(&src, kBytes);
    cudaMemcpyPeerAsync(data, 1, src, 1, 128, nullptr);  // data is device 0's
    return 0;
  });
  EXPECT_EQ(ranks.codes[1], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "memcpy-kind: cudaMemcpyPeerAsync")) << ranks.all();
}

TEST(Ipc, AFlagNeverWrittenIsADeadlockNamingItsOwner) {
  const Ranks ranks = run_ranks([](int rank, const Channel& channel) {
    if (rank == 0) {
      const Exported mine = export_pair(channel);
      channel.await('x');
      return mine.ok ? 0 : 10;
    }
    const Imported peer = import_pair(channel);
    cudaStream_t stream = new_stream();
    if (!peer.ok || driver().wait(stream, word(peer.flags, 3), 7, CU_STREAM_WAIT_VALUE_EQ) != 0) {
      return 20;
    }
    cudaStreamSynchronize(stream);
    return 21;
  });
  EXPECT_EQ(ranks.codes[1], 86) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "deadlock: cuStreamWaitValue32")) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "the word is device memory of process ")) << ranks.all();
  EXPECT_TRUE(has(ranks.errs[1], "imported with cudaIpcOpenMemHandle")) << ranks.all();
}

// What the copy-engine transport asks of a device, in a process of its own: 0 if all is as
// the model documents.
int attributes_as_documented() {
  int engines = 0;
  int unified = 0;
  int peer = 0;
  int self = 1;
  const bool ok =
      cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, 0) == cudaSuccess &&
      cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, 1) == cudaSuccess &&
      cudaDeviceCanAccessPeer(&peer, 0, 1) == cudaSuccess &&
      cudaDeviceCanAccessPeer(&self, 0, 0) == cudaSuccess &&
      cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess &&
      cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessAlreadyEnabled;
  int unused = 0;
  const bool refused =
      cudaDeviceGetAttribute(&unused, cudaDevAttrAsyncEngineCount, 99) == cudaErrorInvalidDevice;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  return ok && refused && engines == 3 && unified == 1 && peer == 1 && self == 0 &&
                 prop.asyncEngineCount == 3
             ? 0
             : 1;
}

TEST(Ipc, DevicesReportThreeCopyEnginesUnifiedAddressingAndPeerAccess) {
  EXPECT_EXIT(std::exit(attributes_as_documented()), ::testing::ExitedWithCode(0), "");
}

TEST(Ipc, CopyEnginesComeFromTheEnvironmentAndAreChecked) {
  EXPECT_EXIT(
      {
        setenv("FOB_MODEL_COPY_ENGINES", "5", 1);
        int engines = 0;
        cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, 0);
        std::exit(engines == 5 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        setenv("FOB_MODEL_COPY_ENGINES", "3x", 1);
        int engines = 0;
        cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, 0);
        std::exit(0);
      },
      ::testing::ExitedWithCode(86), "setup: FOB_MODEL_COPY_ENGINES=3x is not a number");
}

}  // namespace
