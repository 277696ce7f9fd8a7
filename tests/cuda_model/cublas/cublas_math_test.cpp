// The cuBLAS model's math modes and compute types, against the test stand-in core: TF32 rounds
// each input to nearest even, a reduction in the output type loses what one rounding would
// keep, and every GEMM's op note says what it ran with and what its operands held.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../cupti/fake_core.h"

namespace {

class CublasMath : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    fobmodel::fake::enqueued().clear();
  }
  void TearDown() override { cublasDestroy(handle_); }

  // C (1 x 1) = a . b over k fp32 elements, with `compute`.
  float dot(const std::vector<float>& a, const std::vector<float>& b, cublasComputeType_t compute) {
    const float one = 1.0f, zero = 0.0f;
    float c = std::numeric_limits<float>::quiet_NaN();
    const int k = static_cast<int>(a.size());
    EXPECT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &one, a.data(), CUDA_R_32F,
                           1, b.data(), CUDA_R_32F, k, &zero, &c, CUDA_R_32F, 1, compute,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    return c;
  }

  // C (1 x 1) = a . 1 over four elements, of type T (bf16 or fp16) throughout.
  template <typename T>
  float sum_of_four(const float (&values)[4], cudaDataType type) {
    std::vector<T> a(4), b(4), c(1);
    for (int i = 0; i < 4; ++i) {
      a[i] = T(values[i]);
      b[i] = T(1.0f);
    }
    const float one = 1.0f, zero = 0.0f;
    EXPECT_EQ(
        cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 4, &one, a.data(), type, 1, b.data(),
                     type, 4, &zero, c.data(), type, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        CUBLAS_STATUS_SUCCESS);
    return float(c[0]);
  }

  const std::string& last_note() { return fobmodel::fake::enqueued().back().note; }

  cublasHandle_t handle_ = nullptr;
};

TEST_F(CublasMath, FastTf32RoundsEachInputToTenMantissaBitsNearestEven) {
  const float ulp = std::ldexp(1.0f, -10);  // TF32's spacing at 1
  // 1 + ulp/2 is a tie: it goes to the even 1. 1 + 3 ulp/2 is a tie between 1 + ulp (odd) and
  // 1 + 2 ulp (even). 1 + ulp/2 + 2^-20 is past the tie: up.
  EXPECT_EQ(dot({1.0f + ulp / 2}, {1.0f}, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f);
  EXPECT_EQ(dot({1.0f + 3 * ulp / 2}, {1.0f}, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f + 2 * ulp);
  EXPECT_EQ(dot({1.0f + ulp / 2 + std::ldexp(1.0f, -20)}, {1.0f}, CUBLAS_COMPUTE_32F_FAST_TF32),
            1.0f + ulp);
  // B is rounded too; the products accumulate in fp32.
  EXPECT_EQ(
      dot({1.0f, 1.0f}, {1.0f + ulp / 2, std::ldexp(1.0f, -20)}, CUBLAS_COMPUTE_32F_FAST_TF32),
      1.0f + std::ldexp(1.0f, -20));
  EXPECT_EQ(last_note(),
            "sm_target=0 compute=32F_FAST_TF32 reduced_precision_reduction=0 a_integral=1 "
            "b_integral=0");
  // CUBLAS_COMPUTE_32F keeps every bit.
  EXPECT_EQ(dot({1.0f + ulp / 2}, {1.0f}, CUBLAS_COMPUTE_32F), 1.0f + ulp / 2);
  EXPECT_EQ(last_note(),
            "sm_target=0 compute=32F reduced_precision_reduction=0 a_integral=0 b_integral=1");
}

TEST_F(CublasMath, TheOtherFastTypesRoundToHalfAndBfloat) {
  const float x = 1.0f + std::ldexp(1.0f, -9);  // between bf16's 1 and 1 + 2^-7; fp16 has it
  EXPECT_EQ(dot({x}, {1.0f}, CUBLAS_COMPUTE_32F_FAST_16F), x);
  EXPECT_EQ(dot({x}, {1.0f}, CUBLAS_COMPUTE_32F_FAST_16BF), 1.0f);
  EXPECT_NE(last_note().find("compute=32F_FAST_16BF"), std::string::npos);
  // Beyond fp16's range: infinity, as a down-conversion to half gives.
  EXPECT_TRUE(std::isinf(dot({1e6f}, {1.0f}, CUBLAS_COMPUTE_32F_FAST_16F)));
}

TEST_F(CublasMath, ASinglePrecisionMathModeTurnsCompute32fIntoItsFastType) {
  const float ulp = std::ldexp(1.0f, -10);
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(dot({1.0f + ulp / 2}, {1.0f}, CUBLAS_COMPUTE_32F), 1.0f);
  EXPECT_NE(last_note().find("compute=32F_FAST_TF32"), std::string::npos);
  // Not for bf16 operands: the math mode speeds up single-precision routines only.
  std::vector<__nv_bfloat16> a(1, __float2bfloat16_rn(3.0f)), c(1);
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a.data(), CUDA_R_16BF, 1,
                         a.data(), CUDA_R_16BF, 1, &zero, c.data(), CUDA_R_16BF, 1,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(__bfloat162float(c[0]), 9.0f);
  EXPECT_NE(last_note().find("compute=32F reduced_precision_reduction=1"), std::string::npos);
  EXPECT_NE(last_note().find("a_integral=1 b_integral=1"), std::string::npos);
}

// K = 4 split into halves: the first sums to 1 + 2^-8 (bf16's tie between 1 and 1 + 2^-7), the
// second to 2^-20. Summed in fp32 the total is past the tie and rounds up; reduced in bf16 the
// first half rounds to the even 1 and the second cannot lift it.
TEST_F(CublasMath, ReducingInTheOutputTypeSplitsKAndRoundsEachHalf) {
  const float bf16_values[4] = {1.0f, std::ldexp(1.0f, -8), std::ldexp(1.0f, -20), 0.0f};
  EXPECT_EQ(sum_of_four<__nv_bfloat16>(bf16_values, CUDA_R_16BF), 1.0f);
  EXPECT_EQ(last_note(),
            "sm_target=0 compute=32F reduced_precision_reduction=1 a_integral=0 b_integral=1");
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(sum_of_four<__nv_bfloat16>(bf16_values, CUDA_R_16BF), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_NE(last_note().find("reduced_precision_reduction=0"), std::string::npos);
  // fp16: the tie is at 1 + 2^-11.
  const float half_values[4] = {1.0f, std::ldexp(1.0f, -11), std::ldexp(1.0f, -20), 0.0f};
  EXPECT_EQ(sum_of_four<__half>(half_values, CUDA_R_16F), 1.0f + std::ldexp(1.0f, -10));
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(sum_of_four<__half>(half_values, CUDA_R_16F), 1.0f);
}

TEST_F(CublasMath, TheNoteCarriesTheSmTargetAndWhetherTheOperandsWereIntegers) {
  ASSERT_EQ(cublasSetSmCountTarget(handle_, 66), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(dot({2.0f, -3.0f}, {4.0f, 5.0f}, CUBLAS_COMPUTE_32F), -7.0f);
  EXPECT_EQ(last_note(),
            "sm_target=66 compute=32F reduced_precision_reduction=0 a_integral=1 b_integral=1");
  EXPECT_TRUE(
      std::isnan(dot({std::numeric_limits<float>::quiet_NaN()}, {1.0f}, CUBLAS_COMPUTE_32F)));
  EXPECT_NE(last_note().find("a_integral=0 b_integral=1"), std::string::npos);
  // fp64: the operands as doubles.
  const double one = 1.0, zero = 0.0, a[2] = {1.0, 0.5}, b[2] = {2.0, 2.0};
  double c = 0;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, a, CUDA_R_64F, 1, b,
                         CUDA_R_64F, 2, &zero, &c, CUDA_R_64F, 1, CUBLAS_COMPUTE_64F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c, 3.0);
  EXPECT_EQ(last_note(),
            "sm_target=66 compute=64F reduced_precision_reduction=0 a_integral=0 b_integral=1");
  // Negative targets, and targets above the device's 132 SMs, are refused and change nothing.
  EXPECT_EQ(cublasSetSmCountTarget(handle_, -1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetSmCountTarget(handle_, 133), CUBLAS_STATUS_INVALID_VALUE);
  dot({1.0f}, {1.0f}, CUBLAS_COMPUTE_32F);
  EXPECT_NE(last_note().find("sm_target=66 "), std::string::npos);
}

}  // namespace
