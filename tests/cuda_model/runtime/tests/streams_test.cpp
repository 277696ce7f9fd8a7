// Streams, events, host synchronisation, memory and the race detector, through the CUDA API.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "model_test_util.h"

namespace fobmodel_test {
namespace {

using StreamsTest = Model;

constexpr size_t kBytes = 4096;

TEST_F(StreamsTest, DevicesHaveDistinctBusIdsAndTheModelsName) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 4);
  std::set<std::string> buses;
  for (int d = 0; d < count; ++d) {
    char bus[32];
    ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, d), cudaSuccess);
    buses.insert(bus);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, d), cudaSuccess);
    EXPECT_STREQ(prop.name, fobmodel::kDeviceName);
    EXPECT_EQ(prop.memPitch, (size_t{1} << 31) - 1);
  }
  EXPECT_EQ(buses.size(), 4u);
  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(StreamsTest, CopiesRunInStreamOrder) {
  cudaStream_t stream = nonblocking_stream();
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
  std::vector<char> in(kBytes, 7), out(kBytes, 0);
  sleep_on(stream, 20);
  ASSERT_EQ(cudaMemcpyAsync(device, in.data(), kBytes, cudaMemcpyHostToDevice, stream),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 3, 16, stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), device, kBytes, cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(out[16], 7);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(fobmodel::violations(), 0u);
}

// Two streams touch one buffer; only the event wait orders them.
void producer_consumer(bool wait) {
  cudaStream_t producer = nonblocking_stream();
  cudaStream_t consumer = nonblocking_stream();
  void* a = nullptr;
  void* b = nullptr;
  cudaMalloc(&a, kBytes);
  cudaMalloc(&b, kBytes);
  cudaEvent_t produced = nullptr;
  cudaEventCreateWithFlags(&produced, cudaEventDisableTiming);
  {
    InTask task("produce");
    cudaMemsetAsync(a, 1, kBytes, producer);
    cudaEventRecord(produced, producer);
  }
  {
    InTask task("consume");
    if (wait) cudaStreamWaitEvent(consumer, produced, 0);
    cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, consumer);
  }
  cudaDeviceSynchronize();
}

TEST_F(StreamsTest, RaceWithoutEventWaitIsReportedNamingBoth) {
  EXPECT_EXIT(producer_consumer(false), reported(),
              "race: cudaMemsetAsync \\(stream [0-9]+, task \"produce\"\\) writes .* and "
              "cudaMemcpyAsync \\(stream [0-9]+, task \"consume\"\\) reads it");
}

TEST_F(StreamsTest, EventWaitOrdersTheStreams) {
  producer_consumer(true);
  EXPECT_EQ(fobmodel::violations(), 0u);
}

TEST_F(StreamsTest, HostSynchronisationOrdersLaterWork) {
  cudaStream_t one = nonblocking_stream();
  cudaStream_t two = nonblocking_stream();
  void* a = nullptr;
  cudaMalloc(&a, kBytes);
  cudaMemsetAsync(a, 1, kBytes, one);
  ASSERT_EQ(cudaStreamSynchronize(one), cudaSuccess);
  cudaMemsetAsync(a, 2, kBytes, two);
  cudaDeviceSynchronize();
  EXPECT_EQ(fobmodel::violations(), 0u);
}

TEST_F(StreamsTest, LegacyStreamOrdersBlockingStreamsOnly) {
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&blocking, 0, 0), cudaSuccess);
  void* a = nullptr;
  cudaMalloc(&a, kBytes);
  sleep_on(blocking, 10);
  cudaMemsetAsync(a, 1, kBytes, blocking);
  cudaMemsetAsync(a, 2, kBytes, nullptr);   // waits for the blocking stream
  cudaMemsetAsync(a, 3, kBytes, blocking);  // waits for the legacy stream
  cudaDeviceSynchronize();
  EXPECT_EQ(fobmodel::violations(), 0u);
  EXPECT_EXIT(
      {
        cudaStream_t other = nonblocking_stream();
        cudaMemsetAsync(a, 1, kBytes, other);
        cudaMemsetAsync(a, 2, kBytes, nullptr);
        cudaDeviceSynchronize();
      },
      reported(),
      "race: cudaMemsetAsync \\(stream [0-9]+, .* and cudaMemsetAsync \\(stream legacy");
}

TEST_F(StreamsTest, OutOfBoundsCopyIsMemcheck) {
  void* a = nullptr;
  cudaMalloc(&a, kBytes);
  EXPECT_EXIT(cudaMemsetAsync(static_cast<char*>(a) + 1, 0, kBytes, nullptr), reported(),
              "memcheck: cudaMemsetAsync .*runs past the end of the 4096-byte allocation");
  EXPECT_EXIT(cudaMemsetAsync(static_cast<char*>(a) + 2 * kBytes, 0, 1, nullptr), reported(),
              "memcheck: .*is in no live allocation");
  EXPECT_EQ(cudaFree(static_cast<char*>(a) + 1), cudaErrorInvalidValue);
}

TEST_F(StreamsTest, TwoDimensionalCopyPitchRules) {
  void* a = nullptr;
  void* b = nullptr;
  cudaMalloc(&a, kBytes);
  cudaMalloc(&b, kBytes);
  EXPECT_EQ(cudaMemcpy2DAsync(b, 16, a, 32, 32, 4, cudaMemcpyDeviceToDevice, nullptr),
            cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy2DAsync(b, size_t{1} << 31, a, 32, 32, 1, cudaMemcpyDeviceToDevice, nullptr),
            cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy2DAsync(b, 64, a, 32, 32, 4, cudaMemcpyDeviceToDevice, nullptr), cudaSuccess);
  // The last row ends past the allocation: rows are bounds-checked with their pitch.
  EXPECT_EXIT(cudaMemcpy2DAsync(b, 1024, a, 32, 32, 5, cudaMemcpyDeviceToDevice, nullptr),
              reported(), "memcheck: cudaMemcpy2DAsync");
  cudaDeviceSynchronize();
}

TEST_F(StreamsTest, ElapsedTimeFromTheClockWhenTheRecordsRan) {
  cudaStream_t stream = nonblocking_stream();
  cudaEvent_t start = nullptr, end = nullptr, untimed = nullptr, never = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  cudaEventCreate(&never);
  cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming);
  cudaEventRecord(start, stream);
  cudaEventRecord(untimed, stream);
  sleep_on(stream, 30);
  cudaEventRecord(end, stream);
  float ms = 0;
  ASSERT_EQ(cudaEventSynchronize(end), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 29.0f);
  EXPECT_LT(ms, 1000.0f);
  EXPECT_EQ(cudaEventElapsedTime(&ms, untimed, end), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&ms, never, end), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventQuery(never), cudaSuccess);
  sleep_on(stream, 200);
  cudaEventRecord(end, stream);
  EXPECT_EQ(cudaEventQuery(end), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
}

TEST_F(StreamsTest, HostHandOffCreatesAnEdge) {
  cudaStream_t one = nonblocking_stream();
  cudaStream_t two = nonblocking_stream();
  void* a = nullptr;
  cudaMalloc(&a, kBytes);
  int key = 0;
  cudaMemsetAsync(a, 1, kBytes, one);
  std::thread waiter([&] {
    cudaStreamSynchronize(one);
    fobmodel::host_release(&key);
  });
  waiter.join();
  fobmodel::host_acquire(&key);
  cudaMemsetAsync(a, 2, kBytes, two);
  cudaDeviceSynchronize();
  EXPECT_EQ(fobmodel::violations(), 0u);
}

}  // namespace
}  // namespace fobmodel_test
