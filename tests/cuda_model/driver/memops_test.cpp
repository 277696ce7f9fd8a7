// The driver model's stream memory operations on the runtime model, found with dlopen/dlsym as
// the cuda backend finds them: a wait holds its stream until the host writes, each condition,
// the argument rules, no happens-before edge for the race detector, a wait never satisfied
// reported as a deadlock, and a captured wait replayed.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fobmodel/model.h"

namespace {

using WaitFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
using PointerFn = CUresult (*)(CUdeviceptr*, void*, unsigned);
using NameFn = CUresult (*)(CUresult, const char**);

struct Driver {
  WaitFn wait = nullptr;
  WaitFn write = nullptr;
  PointerFn pointer = nullptr;
  NameFn name = nullptr;
  const char* identity = nullptr;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver out;
    void* lib = dlopen(FOB_MODEL_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return out;
    out.wait = reinterpret_cast<WaitFn>(dlsym(lib, "cuStreamWaitValue32_v2"));
    out.write = reinterpret_cast<WaitFn>(dlsym(lib, "cuStreamWriteValue32_v2"));
    out.pointer = reinterpret_cast<PointerFn>(dlsym(lib, "cuMemHostGetDevicePointer_v2"));
    out.name = reinterpret_cast<NameFn>(dlsym(lib, "cuGetErrorName"));
    out.identity = static_cast<const char*>(dlsym(lib, "fobmodel_identity"));
    return out;
  }();
  return d;
}

class MemOps : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ASSERT_NE(driver().wait, nullptr);
    ASSERT_NE(driver().write, nullptr);
    ASSERT_NE(driver().pointer, nullptr);
    ASSERT_EQ(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, 0), cudaSuccess);
    ASSERT_EQ(cudaHostAlloc(&host_, 64, cudaHostAllocMapped), cudaSuccess);
    flag_ = static_cast<uint32_t*>(host_);
    __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
    ASSERT_EQ(driver().pointer(&device_flag_, host_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cudaMalloc(&buffer_, 1024), cudaSuccess);
  }
  void TearDown() override {
    __atomic_store_n(flag_, 0xffffffffu, __ATOMIC_RELEASE);
    cudaDeviceSynchronize();
  }
  // Whether work queued behind a wait has run, 50 ms after it was queued.
  bool ran_behind_wait() {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return cudaStreamQuery(stream_) == cudaSuccess;
  }
  void set(uint32_t value) { __atomic_store_n(flag_, value, __ATOMIC_RELEASE); }

  cudaStream_t stream_ = nullptr;
  void* host_ = nullptr;
  uint32_t* flag_ = nullptr;
  CUdeviceptr device_flag_ = 0;
  void* buffer_ = nullptr;
};

TEST_F(MemOps, TheLibraryIsTheModelsAndMapsPinnedMemoryToItself) {
  ASSERT_NE(driver().identity, nullptr);
  EXPECT_EQ(device_flag_, reinterpret_cast<CUdeviceptr>(host_));
  CUdeviceptr p = 0;
  EXPECT_EQ(driver().pointer(&p, host_, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver().pointer(nullptr, host_, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver().pointer(&p, buffer_, 0), CUDA_ERROR_INVALID_VALUE);
  const char* name = nullptr;
  ASSERT_EQ(driver().name(CUDA_ERROR_NOT_SUPPORTED, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_NOT_SUPPORTED");
}

TEST_F(MemOps, AWaitHoldsItsStreamUntilTheHostWritesTheValue) {
  ASSERT_EQ(driver().wait(stream_, device_flag_, 3, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  ASSERT_EQ(cudaMemsetAsync(buffer_, 1, 1024, stream_), cudaSuccess);
  EXPECT_FALSE(ran_behind_wait());
  set(2);
  EXPECT_FALSE(ran_behind_wait());
  set(3);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(fobmodel::violations(), 0u);
}

TEST_F(MemOps, EachConditionAsCudaHDefinesIt) {
  // GEQ is cyclic: 0 - 0xffffffff is 1 as an int32, so 0 is "after" 0xffffffff.
  set(0);
  ASSERT_EQ(driver().wait(stream_, device_flag_, 0xffffffffu, CU_STREAM_WAIT_VALUE_GEQ),
            CUDA_SUCCESS);
  EXPECT_TRUE(ran_behind_wait());
  ASSERT_EQ(driver().wait(stream_, device_flag_, 5, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  set(6);
  EXPECT_FALSE(ran_behind_wait());
  set(5);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ASSERT_EQ(driver().wait(stream_, device_flag_, 0x10, CU_STREAM_WAIT_VALUE_AND), CUDA_SUCCESS);
  EXPECT_FALSE(ran_behind_wait());
  set(0x30);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  // NOR: ~(*addr | value) != 0, false only when the two cover every bit.
  set(0xffff0000u);
  ASSERT_EQ(driver().wait(stream_, device_flag_, 0x0000ffffu,
                          CU_STREAM_WAIT_VALUE_NOR | CU_STREAM_WAIT_VALUE_FLUSH),
            CUDA_SUCCESS);
  EXPECT_FALSE(ran_behind_wait());
  set(0);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(MemOps, AWriteRunsInStreamOrderAndReleasesAWaitOnAnotherStream) {
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&other, cudaStreamNonBlocking, 0), cudaSuccess);
  ASSERT_EQ(driver().wait(other, device_flag_, 9, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  ASSERT_EQ(driver().write(stream_, device_flag_, 9, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  EXPECT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(__atomic_load_n(flag_, __ATOMIC_ACQUIRE), 9u);
  EXPECT_EQ(driver().write(stream_, device_flag_, 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(driver().write(stream_, device_flag_, 1, 4), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemOps, FlagsAddressesAndStreamsAreChecked) {
  EXPECT_EQ(driver().wait(stream_, device_flag_, 1, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver().wait(reinterpret_cast<CUstream>(&flag_), device_flag_, 0, 0),
            CUDA_ERROR_INVALID_HANDLE);
  // A failed driver call leaves the runtime's last error alone.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EXIT(driver().wait(stream_, device_flag_ + 2, 1, 0), ::testing::ExitedWithCode(86),
              "memcheck: cuStreamWaitValue32 .* is not 4-byte aligned");
  uint32_t pageable = 0;
  EXPECT_EXIT(driver().wait(stream_, reinterpret_cast<CUdeviceptr>(&pageable), 1, 0),
              ::testing::ExitedWithCode(86),
              "memcheck: .* is neither device memory nor pinned host memory");
  EXPECT_EXIT(driver().write(stream_, device_flag_ + 64, 1, 0), ::testing::ExitedWithCode(86),
              "memcheck: cuStreamWriteValue32 .* is in no live allocation");
  // Device memory is a valid word too.
  ASSERT_EQ(cudaMemsetAsync(buffer_, 0, 4, stream_), cudaSuccess);
  EXPECT_EQ(
      driver().wait(stream_, reinterpret_cast<CUdeviceptr>(buffer_), 0, CU_STREAM_WAIT_VALUE_EQ),
      CUDA_SUCCESS);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

// Stream one writes a buffer then the flag; stream two waits for the flag and reads the buffer.
// The wait orders them in time, but "Synchronization ordering established through this API is
// not visible to CUDA": without an event as well, the two are a race.
void handoff(cudaStream_t one, cudaStream_t two, CUdeviceptr flag, void* buffer, bool event) {
  cudaEvent_t written = nullptr;
  cudaEventCreateWithFlags(&written, cudaEventDisableTiming);
  void* copy = nullptr;
  cudaMalloc(&copy, 1024);
  cudaMemsetAsync(buffer, 1, 1024, one);
  cudaEventRecord(written, one);
  driver().write(one, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT);
  driver().wait(two, flag, 1, CU_STREAM_WAIT_VALUE_EQ);
  if (event) cudaStreamWaitEvent(two, written, 0);
  cudaMemcpyAsync(copy, buffer, 1024, cudaMemcpyDeviceToDevice, two);
  cudaDeviceSynchronize();
}

TEST_F(MemOps, TheWaitIsNoHappensBeforeEdge) {
  cudaStream_t two = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&two, cudaStreamNonBlocking, 0), cudaSuccess);
  EXPECT_EXIT(handoff(stream_, two, device_flag_, buffer_, false), ::testing::ExitedWithCode(86),
              "race: cudaMemsetAsync .* and cudaMemcpyAsync");
  set(0);
  handoff(stream_, two, device_flag_, buffer_, true);
  EXPECT_EQ(fobmodel::violations(), 0u);
}

TEST_F(MemOps, AWaitTheHostNeverSatisfiesIsADeadlockNamingStreamTaskAndValue) {
  setenv("FOB_MODEL_DEADLOCK_S", "0.3", 1);
  EXPECT_EXIT(
      {
        fobmodel::nvtx_push("gate");
        driver().wait(stream_, device_flag_, 7, CU_STREAM_WAIT_VALUE_EQ);
        fobmodel::nvtx_pop();
        cudaStreamSynchronize(stream_);
      },
      ::testing::ExitedWithCode(86),
      "deadlock: cuStreamWaitValue32 \\(stream [0-9]+, task \"gate\"\\) has waited [0-9.]+ s "
      "for the 32-bit word at 0x[0-9a-f]+ to satisfy \\*addr == 7; it holds 0: the host never "
      "wrote it");
  unsetenv("FOB_MODEL_DEADLOCK_S");
}

TEST_F(MemOps, ACapturedWaitIsANodeThatEveryReplayWaitsOn) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(driver().wait(stream_, device_flag_, 1, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  ASSERT_EQ(cudaMemsetAsync(buffer_, 1, 1024, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  EXPECT_FALSE(ran_behind_wait());
  set(1);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
