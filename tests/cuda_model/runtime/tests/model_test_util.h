// Helpers of the runtime model's tests.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fobmodel/model.h"

namespace fobmodel_test {

// A rule's report ends the process with exit 86 (FOB_MODEL_FATAL defaults to 1).
inline auto reported() {
  return ::testing::ExitedWithCode(86);
}

// A stream that does not synchronise with the legacy default stream.
inline cudaStream_t nonblocking_stream() {
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0), cudaSuccess);
  return stream;
}

// An op that takes `ms` milliseconds on its stream: makes an ordering bug show as a wrong order.
inline void sleep_on(cudaStream_t stream, int ms) {
  fobmodel::Op op;
  op.name = "sleep";
  op.run = [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  EXPECT_EQ(fobmodel::enqueue(stream, std::move(op)), cudaSuccess);
}

// Enqueues from inside the NVTX range `task`, as the backend does per plan task.
struct InTask {
  explicit InTask(const char* task) { fobmodel::nvtx_push(task); }
  ~InTask() { fobmodel::nvtx_pop(); }
};

class Model : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    cudaGetLastError();  // an earlier test's error stays with this thread, as on CUDA
  }
};

}  // namespace fobmodel_test
