// The cuBLAS model against the test stand-in core (cupti/fake_core.h): the documented statuses,
// the ranges each GEMM declares, and its arithmetic against a naive column-major reference.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../cupti/fake_core.h"

// The runtime calls the model's cublasSetSmCountTarget asks: one device of 132 SMs.
extern "C" cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
extern "C" cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int) {
  *prop = cudaDeviceProp{};
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}

namespace {

const float kOne = 1.0f, kZero = 0.0f;

class CublasModel : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    fobmodel::fake::enqueued().clear();
    fobmodel::fake::reported().clear();
  }
  void TearDown() override { EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS); }

  // A float GEMM call with everything but the varied argument valid (m = n = k = 2).
  cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                      int ldb, int ldc, cudaDataType type = CUDA_R_32F,
                      cublasComputeType_t compute = CUBLAS_COMPUTE_32F, const void* alpha = &kOne) {
    return cublasGemmEx(handle_, ta, tb, m, n, k, alpha, buf_.data(), type, lda, buf_.data(), type,
                        ldb, &kZero, out_.data(), type, ldc, compute, CUBLAS_GEMM_DEFAULT);
  }

  cublasHandle_t handle_ = nullptr;
  std::vector<double> buf_ = std::vector<double>(64, 1.0);
  std::vector<double> out_ = std::vector<double>(64, 0.0);
};

TEST_F(CublasModel, DimensionsAndLeadingDimensionsAreChecked) {
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(N, N, -1, 2, 2, 2, 2, 2), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(N, N, 2, 2, -1, 2, 2, 2), CUBLAS_STATUS_INVALID_VALUE);
  // lda >= max(1, m) for op N, max(1, k) for op T: m = 4, k = 2.
  EXPECT_EQ(gemm(N, N, 4, 2, 2, 3, 2, 4), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(T, N, 4, 2, 2, 2, 2, 4), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(T, N, 4, 2, 2, 1, 2, 4), CUBLAS_STATUS_INVALID_VALUE);
  // ldb >= max(1, k) for op N, max(1, n) for op T: n = 4, k = 2.
  EXPECT_EQ(gemm(N, N, 2, 4, 2, 2, 1, 2), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(N, T, 2, 4, 2, 2, 3, 2), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(N, T, 2, 4, 2, 2, 4, 2), CUBLAS_STATUS_SUCCESS);
  // ldc >= max(1, m), and max(1, ...) even for empty matrices.
  EXPECT_EQ(gemm(N, N, 4, 2, 2, 4, 2, 3), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(N, N, 0, 2, 2, 1, 2, 0), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(static_cast<cublasOperation_t>(3), N, 2, 2, 2, 2, 2, 2),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, CUDA_R_32F, CUBLAS_COMPUTE_32F, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmEx(nullptr, N, N, 2, 2, 2, &kOne, buf_.data(), CUDA_R_32F, 2, buf_.data(),
                         CUDA_R_32F, 2, &kZero, out_.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_TRUE(fobmodel::fake::reported().empty());
}

TEST_F(CublasModel, TypeCombinationsFollowTheTable) {
  const auto N = CUBLAS_OP_N;
  for (cudaDataType t : {CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F}) {
    EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, t), CUBLAS_STATUS_SUCCESS) << t;
  }
  const double one = 1.0;
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, CUDA_R_64F, CUBLAS_COMPUTE_64F, &one),
            CUBLAS_STATUS_SUCCESS);
  // Documented combinations are NOT_SUPPORTED when absent from the table, INVALID_VALUE when a
  // type or compute type is not valid at all.
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, CUDA_R_16BF, CUBLAS_COMPUTE_64F),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, CUDA_R_64F, CUBLAS_COMPUTE_32F),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, CUDA_R_16BF, CUBLAS_COMPUTE_32F_FAST_TF32),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, CUDA_R_32F, static_cast<cublasComputeType_t>(0)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(N, N, 2, 2, 2, 2, 2, 2, static_cast<cudaDataType>(99)),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmEx(handle_, N, N, 2, 2, 2, &kOne, buf_.data(), CUDA_R_16BF, 2, buf_.data(),
                         CUDA_R_16F, 2, &kZero, out_.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cublasGemmEx(handle_, N, N, 2, 2, 2, &kOne, buf_.data(), CUDA_R_32F, 2, buf_.data(),
                         CUDA_R_32F, 2, &kZero, out_.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                         static_cast<cublasGemmAlgo_t>(50)),
            CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(CublasModel, HandleSettingsAreChecked) {
  EXPECT_EQ(cublasSetMathMode(handle_, static_cast<cublasMath_t>(
                                           CUBLAS_DEFAULT_MATH |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetMathMode(handle_, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetSmCountTarget(handle_, 0), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetSmCountTarget(handle_, 132), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetSmCountTarget(handle_, 133), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetSmCountTarget(handle_, -1), CUBLAS_STATUS_INVALID_VALUE);
  int version = 0, major = 0;
  EXPECT_EQ(cublasGetVersion(handle_, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(version, CUBLAS_VERSION);
  EXPECT_EQ(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, 13);
  EXPECT_EQ(cublasGetProperty(MAJOR_VERSION, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_STRNE(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE), "");
  EXPECT_EQ(cublasCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(CublasModel, WorkspaceRules) {
  alignas(256) static char workspace[64 * 1024];
  fobmodel::fake::add_device_range(workspace, sizeof(workspace));
  EXPECT_EQ(cublasSetWorkspace(handle_, workspace + 128, 1024), CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(cublasSetWorkspace(handle_, workspace, 1024), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, 2, 2, 2), CUBLAS_STATUS_ALLOC_FAILED);
  ASSERT_EQ(cublasSetWorkspace(handle_, workspace, sizeof(workspace)), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(gemm(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  const auto& with = fobmodel::fake::enqueued().back().footprint;
  ASSERT_FALSE(with.empty());
  EXPECT_EQ(with.back().base, workspace);
  EXPECT_EQ(with.back().width, sizeof(workspace));
  EXPECT_TRUE(with.back().write);
  // cublasSetStream puts the handle back on its default workspace pool.
  ASSERT_EQ(cublasSetStream(handle_, nullptr), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(gemm(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  EXPECT_NE(fobmodel::fake::enqueued().back().footprint.back().base, workspace);
  // A workspace that is not device memory.
  static std::vector<char> host(64 * 1024 + 256);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(host.data()) + 255) & ~255);
  EXPECT_EQ(cublasSetWorkspace(handle_, aligned, 64 * 1024), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(fobmodel::fake::reported().size(), 1u);
}

TEST_F(CublasModel, UnknownOrDestroyedHandleIsReported) {
  cublasHandle_t other = nullptr;
  ASSERT_EQ(cublasCreate(&other), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy(other), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetStream(other, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  ASSERT_EQ(fobmodel::fake::reported().size(), 1u);
  EXPECT_NE(fobmodel::fake::reported()[0].find("destroyed"), std::string::npos);
}

}  // namespace
