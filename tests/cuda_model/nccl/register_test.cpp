// ncclMemAlloc / ncclMemFree and buffer registration through the C API, each rank a process:
// what NCCL 2.28.9's allocator and register.cc accept and refuse, the op notes that say whether
// a call's buffers were registered (FOB_MODEL_OP_LOG), and the rule "nccl-unregistered".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e_util.h"
#include "fobmodel/model.h"

namespace {

using fobnccl_e2e::all_errs;
using fobnccl_e2e::run_ranks;

TEST(NcclMemory, MemAllocIsDeviceMemoryOfTheCurrentDeviceAndMemFreeOnlyFreesIt) {
  const auto ranks = run_ranks(1, [](int, const ncclUniqueId&) {
    cudaSetDevice(2);
    void* p = nullptr;
    if (ncclMemAlloc(&p, 1000) != ncclSuccess || p == nullptr) return 10;
    int device = -1;
    if (fobmodel::memory_of(p, &device) != fobmodel::Memory::device || device != 2) return 11;
    if (fobmodel::live_allocation(p, 1000) == nullptr) return 12;
    // Size 0 falls back to cudaMalloc: success and NULL. A NULL ptr is a CUDA failure.
    void* empty = &device;
    if (ncclMemAlloc(&empty, 0) != ncclSuccess || empty != nullptr) return 13;
    if (ncclMemAlloc(nullptr, 64) != ncclUnhandledCudaError) return 14;
    // Freed on its own device from another current device, which stays current.
    cudaSetDevice(0);
    if (ncclMemFree(p) != ncclSuccess) return 15;
    int current = -1;
    cudaGetDevice(&current);
    if (current != 0 || fobmodel::live_allocation(p, 1) != nullptr) return 16;
    // Not ncclMemAlloc's: refused as NCCL's cuMem path refuses it; NULL is nothing.
    void* other = nullptr;
    cudaMalloc(&other, 64);
    if (ncclMemFree(other) != ncclUnhandledCudaError) return 17;
    if (ncclMemFree(p) != ncclUnhandledCudaError) return 18;
    return ncclMemFree(nullptr) == ncclSuccess ? 0 : 19;
  });
  EXPECT_EQ(ranks.codes, (std::vector<int>{0})) << all_errs(ranks);
}

TEST(NcclMemory, RegistrationHandlesAreCountedAndPerCommunicator) {
  const auto ranks = run_ranks(1, [](int rank, const ncclUniqueId& id) {
    ncclComm_t comm = nullptr, other = nullptr;
    ncclUniqueId other_id;
    ncclGetUniqueId(&other_id);
    if (ncclCommInitRank(&comm, 1, id, rank) != ncclSuccess ||
        ncclCommInitRank(&other, 1, other_id, 0) != ncclSuccess) {
      return 10;
    }
    char* buf = nullptr;
    ncclMemAlloc(reinterpret_cast<void**>(&buf), 1 << 16);
    void *h1 = nullptr, *h2 = nullptr, *h3 = nullptr;
    if (ncclCommRegister(comm, buf, 1 << 16, &h1) != ncclSuccess || h1 == nullptr) return 11;
    // Inside a range already kept: the same handle, counted once more.
    if (ncclCommRegister(comm, buf + 100, 1000, &h2) != ncclSuccess || h2 != h1) return 12;
    // Any range is accepted (the real registration happens at first use): pageable memory too.
    static char pageable[64];
    if (ncclCommRegister(comm, pageable, sizeof pageable, &h3) != ncclSuccess) return 13;
    if (ncclCommRegister(comm, buf, 16, nullptr) != ncclInvalidArgument) return 14;
    // Another communicator's handle is not this one's.
    if (ncclCommDeregister(other, h1) != ncclInvalidUsage) return 15;
    if (ncclCommDeregister(comm, h1) != ncclSuccess) return 16;
    if (ncclCommDeregister(comm, h1) != ncclSuccess) return 17;
    if (ncclCommDeregister(comm, h1) != ncclInvalidUsage) return 18;
    if (ncclCommDeregister(comm, nullptr) != ncclSuccess) return 19;
    return ncclCommDeregister(comm, h3) == ncclSuccess ? 0 : 20;
  });
  EXPECT_EQ(ranks.codes, (std::vector<int>{0})) << all_errs(ranks);
  EXPECT_NE(ranks.errs[0].find("WARN Deregister: Could not find handle"), std::string::npos);
}

// One rank sends to itself from `send` into `recv` (both ncclMemAlloc'd, `registered` of them
// registered) and returns the op log's line for it.
std::string self_exchange(const ncclUniqueId& id, const std::string& oplog, int registered) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return "init failed";
  float *send = nullptr, *recv = nullptr;
  ncclMemAlloc(reinterpret_cast<void**>(&send), 4096);
  ncclMemAlloc(reinterpret_cast<void**>(&recv), 4096);
  void* handle = nullptr;
  if (registered >= 1) ncclCommRegister(comm, send, 4096, &handle);
  if (registered >= 2) ncclCommRegister(comm, recv, 4096, &handle);
  ncclGroupStart();
  ncclSend(send, 100, ncclFloat32, 0, comm, nullptr);
  ncclRecv(recv, 100, ncclFloat32, 0, comm, nullptr);
  ncclGroupEnd();
  cudaDeviceSynchronize();
  for (const std::string& line : fobnccl_e2e::lines_of(fobnccl_e2e::read_file(oplog))) {
    if (line.find("ncclDevKernel_SendRecv") != std::string::npos) return line;
  }
  return "no line";
}

TEST(NcclMemory, TheOpNoteSaysWhetherEveryBufferWasRegistered) {
  fobnccl_e2e::TempDir dir;
  for (int registered = 0; registered <= 2; ++registered) {
    for (const char* local : {"1", "0"}) {
      const std::string oplog = dir.file("ops." + std::to_string(registered) + local);
      const auto ranks = run_ranks(1, [&](int, const ncclUniqueId& id) {
        setenv("FOB_MODEL_OP_LOG", oplog.c_str(), 1);
        setenv("NCCL_LOCAL_REGISTER", local, 1);
        const std::string line = self_exchange(id, oplog, registered);
        // NCCL_LOCAL_REGISTER=0 skips every registration.
        const bool all = registered == 2 && std::string(local) == "1";
        const std::string want = std::string("bytes=400 registered=") + (all ? "1" : "0") + "\"";
        const size_t at = line.find("note=\"comm=0x");
        if (at == std::string::npos ||
            line.find(" max_ctas=64 coll_channels=32 ", at) == std::string::npos) {
          return 20;
        }
        return line.find(want, at) != std::string::npos ? 0 : 21;
      });
      EXPECT_EQ(ranks.codes, (std::vector<int>{0}))
          << "registered " << registered << ", NCCL_LOCAL_REGISTER " << local << "\n"
          << all_errs(ranks) << fobnccl_e2e::read_file(oplog);
    }
  }
}

TEST(NcclMemory, RequiringRegistrationMakesAnUnregisteredBufferARule) {
  fobnccl_e2e::TempDir dir;
  const std::string oplog = dir.file("ops");
  const auto ranks = run_ranks(1, [&](int, const ncclUniqueId& id) {
    setenv("FOB_MODEL_NCCL_REQUIRE_REGISTERED", "1", 1);
    fobmodel::nvtx_push("exchange");
    self_exchange(id, oplog, 1);
    return 0;
  });
  ASSERT_EQ(ranks.codes, (std::vector<int>{86})) << all_errs(ranks);
  EXPECT_NE(ranks.errs[0].find("[cuda model] nccl-unregistered: ncclRecv on rank 0 of comm 0x"),
            std::string::npos)
      << ranks.errs[0];
  EXPECT_NE(ranks.errs[0].find("(task \"exchange\"): the buffer [0x"), std::string::npos);
  // Everything registered: no report.
  const auto clean = run_ranks(1, [&](int, const ncclUniqueId& id) {
    setenv("FOB_MODEL_NCCL_REQUIRE_REGISTERED", "1", 1);
    self_exchange(id, oplog, 2);
    return static_cast<int>(fobmodel::violations());
  });
  EXPECT_EQ(clean.codes, (std::vector<int>{0})) << all_errs(clean);
}

}  // namespace
