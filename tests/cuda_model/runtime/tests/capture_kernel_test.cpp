// Graph capture, replay, kernels run as fibers, and the NVTX injection, through the CUDA API.
#include <vector>

#include "model_test_util.h"
#include "nvtx3/nvToolsExt.h"
#include "test_kernels.h"

namespace fobmodel_test {
namespace {

using CaptureTest = Model;
using KernelTest = Model;

constexpr size_t kBytes = 1024;

TEST_F(CaptureTest, SynchronisingDuringCaptureFailsAndInvalidates) {
  cudaStream_t stream = nonblocking_stream();
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
  // Relaxed mode allows the unsafe calls of other streams.
  cudaStream_t other = nonblocking_stream();
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST_F(CaptureTest, UnjoinedForkFailsAtEnd) {
  cudaStream_t origin = nonblocking_stream();
  cudaStream_t side = nonblocking_stream();
  void* a = nullptr;
  cudaMalloc(&a, kBytes);
  cudaEvent_t fork = nullptr;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  ASSERT_EQ(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaEventRecord(fork, origin);
  ASSERT_EQ(cudaStreamWaitEvent(side, fork, 0), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(a, 1, kBytes, side), cudaSuccess);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(origin, &graph), cudaErrorStreamCaptureUnjoined);
  EXPECT_EQ(graph, nullptr);
}

// origin writes a, forks side which copies a to b (and, with `joined`, joins back before origin
// overwrites a). Captured once, replayed twice.
void fork_join_graph(bool joined, std::vector<char>& out) {
  cudaStream_t origin = nonblocking_stream();
  cudaStream_t side = nonblocking_stream();
  void* a = nullptr;
  void* b = nullptr;
  cudaMalloc(&a, kBytes);
  cudaMalloc(&b, kBytes);
  cudaEvent_t fork = nullptr, join = nullptr, end = nullptr;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  cudaEventCreate(&end);
  cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal);
  cudaMemsetAsync(a, 5, kBytes, origin);
  cudaEventRecord(fork, origin);
  cudaStreamWaitEvent(side, fork, 0);
  cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, side);
  cudaEventRecord(join, side);
  if (joined) cudaStreamWaitEvent(origin, join, 0);
  cudaMemsetAsync(a, 6, kBytes, origin);
  if (!joined) cudaStreamWaitEvent(origin, join, 0);
  cudaEventRecordWithFlags(end, origin, cudaEventRecordExternal);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(origin, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) ASSERT_EQ(cudaGraphLaunch(exec, origin), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(end), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(origin), cudaSuccess);
  out.resize(kBytes);
  cudaMemcpy(out.data(), b, kBytes, cudaMemcpyDeviceToHost);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_F(CaptureTest, ReplayFollowsTheCapturedEdges) {
  std::vector<char> out;
  fork_join_graph(true, out);
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(fobmodel::violations(), 0u);
}

TEST_F(CaptureTest, ReplayWithAMissingEdgeIsARace) {
  std::vector<char> out;
  EXPECT_EXIT(fork_join_graph(false, out), reported(), "race: .*graph lane.*graph lane");
}

TEST_F(KernelTest, KernelsComputeWithBarriersAndShuffles) {
  constexpr int kCount = 1000;
  float* in = nullptr;
  float* out = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&in), kCount * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&out), kCount * sizeof(float));
  std::vector<float> ones(kCount, 1.0f);
  cudaMemcpy(in, ones.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(out, ones.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
  ASSERT_EQ(add(out, in, kCount, nullptr), cudaSuccess);
  ASSERT_EQ(block_sum(out, in, kCount, nullptr), cudaSuccess);
  float sum = 0;
  cudaMemcpy(&sum, in, sizeof sum, cudaMemcpyDeviceToHost);
  EXPECT_EQ(sum, 2.0f * kCount);
  EXPECT_EQ(fobmodel::violations(), 0u);
}

TEST_F(KernelTest, BadConfigurationIsALaunchError) {
  float* data = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&data), 64 * sizeof(float));
  EXPECT_EQ(write_index(data, 0, nullptr), cudaErrorInvalidConfiguration);  // zero blocks
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(KernelTest, KernelAccessPastItsAllocationIsMemcheck) {
  if (!traced()) GTEST_SKIP() << "kernels compiled without sanitizer coverage";
  float* data = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&data), 100 * sizeof(float));
  EXPECT_EXIT(
      {
        write_index(data, 200, nullptr);
        cudaDeviceSynchronize();
      },
      reported(), "memcheck: kernel write_index_kernel .*writes 4 bytes");
}

TEST_F(KernelTest, KernelRacesWithACopyOnAnotherStream) {
  float* data = nullptr;
  float* copy = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&data), 256 * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&copy), 256 * sizeof(float));
  cudaStream_t one = nonblocking_stream();
  cudaStream_t two = nonblocking_stream();
  EXPECT_EXIT(
      {
        InTask task("fill");
        write_index(data, 256, one);
        cudaMemcpyAsync(copy, data, 256 * sizeof(float), cudaMemcpyDeviceToDevice, two);
        cudaDeviceSynchronize();
      },
      reported(),
      "race: kernel write_index_kernel \\(stream [0-9]+, task \"fill\"\\) writes .* "
      "and cudaMemcpyAsync .* reads it");
}

TEST_F(KernelTest, NvtxRangesNameTheTask) {
  nvtxRangePushA("outer");
  nvtxRangePushA("task 7");
  EXPECT_EQ(fobmodel::current_task(), "task 7");
  nvtxRangePop();
  EXPECT_EQ(fobmodel::current_task(), "outer");
  nvtxRangePop();
  const nvtxRangeId_t range = nvtxRangeStartA("case");
  EXPECT_EQ(fobmodel::current_task(), "case");
  nvtxRangeEnd(range);
  EXPECT_EQ(fobmodel::current_task(), "");
}

}  // namespace
}  // namespace fobmodel_test
