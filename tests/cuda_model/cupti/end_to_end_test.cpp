// The cuBLAS and CUPTI models on the runtime model, as the cuda backend uses them: a GEMM on a
// stream with a workspace, computed on the stream's thread; CUPTI external correlation of its
// kernel only where driver API activity is recorded.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

std::mutex mutex;
std::unordered_map<uint32_t, uint64_t> externals;  // correlation id -> external id
std::vector<uint32_t> kernels;                     // correlation ids of kernel records

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard lock(mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      kernels.push_back(reinterpret_cast<CUpti_ActivityKernel10*>(record)->correlationId);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(record);
      externals[e->correlationId] = e->externalId;
    }
  }
  std::free(buffer);
}

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, 0), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&a_, 64 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&c_, 64 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&workspace_, 1 << 20), cudaSuccess);
    std::vector<float> host(64);
    for (int i = 0; i < 64; ++i) host[i] = float(i % 5);
    ASSERT_EQ(cudaMemcpy(a_, host.data(), 64 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(handle_, stream_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetWorkspace(handle_, workspace_, 1 << 20), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cuptiActivityRegisterCallbacks(requested, completed), CUPTI_SUCCESS);
  }
  void TearDown() override {
    cublasDestroy(handle_);
    cudaFree(a_);
    cudaFree(c_);
    cudaFree(workspace_);
    cudaStreamDestroy(stream_);
  }
  // C[4x4] = A[4x4]^T A[4x4], under external id `id`.
  void gemm(uint64_t id) {
    const float one = 1.0f, zero = 0.0f;
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
    ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 4, &one, a_, CUDA_R_32F, 4, a_,
                           CUDA_R_32F, 4, &zero, c_, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    uint64_t last = 0;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  }

  cudaStream_t stream_ = nullptr;
  void *a_ = nullptr, *c_ = nullptr, *workspace_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

TEST_F(EndToEnd, GemmComputesOnTheStream) {
  gemm(1);
  std::vector<float> a(16), c(16);
  ASSERT_EQ(cudaMemcpy(a.data(), a_, 16 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(c.data(), c_, 16 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 4; ++i) {
      float want = 0;
      for (int p = 0; p < 4; ++p) want += a[i * 4 + p] * a[j * 4 + p];
      EXPECT_EQ(c[j * 4 + i], want) << i << ", " << j;
    }
  }
}

TEST_F(EndToEnd, KernelsAreCorrelatedOnlyWithDriverActivity) {
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}) {
    ASSERT_EQ(cuptiActivityEnable(k), CUPTI_SUCCESS);
  }
  gemm(7);
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_TRUE(externals.empty());
    kernels.clear();
  }
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
  gemm(8);
  std::lock_guard lock(mutex);
  ASSERT_EQ(kernels.size(), 1u);
  ASSERT_TRUE(externals.contains(kernels[0]));
  EXPECT_EQ(externals[kernels[0]], 8u);
}

}  // namespace
