// The cuBLAS model's arithmetic and footprints: column-major GEMMs with transposes and padded
// leading dimensions against a naive reference, bit for bit on small integers in fp32 and within
// one rounding in bf16; strided batches; and the ranges each call declares.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../cupti/fake_core.h"

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A column-major rows x cols matrix with leading dimension ld, padding rows NaN so that a read
// outside the matrix shows in the result.
struct Matrix {
  int rows, cols, ld;
  std::vector<float> data;
  Matrix(int r, int c, int l, int seed) : rows(r), cols(c), ld(l), data(size_t(l) * c, kNaN) {
    for (int j = 0; j < c; ++j) {
      for (int i = 0; i < r; ++i) data[size_t(j) * l + i] = float((i * 3 + j * 5 + seed) % 7 - 3);
    }
  }
  float at(int i, int j) const { return data[size_t(j) * ld + i]; }
};

// op(X)[i][j] for a stored matrix X.
float op_at(const Matrix& x, cublasOperation_t op, int i, int j) {
  return op == CUBLAS_OP_N ? x.at(i, j) : x.at(j, i);
}

float reference(const Matrix& a, cublasOperation_t ta, const Matrix& b, cublasOperation_t tb, int i,
                int j, int k) {
  float sum = 0;
  for (int p = 0; p < k; ++p) sum += op_at(a, ta, i, p) * op_at(b, tb, p, j);
  return sum;
}

class CublasCompute
    : public ::testing::TestWithParam<std::tuple<cublasOperation_t, cublasOperation_t>> {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { cublasDestroy(handle_); }
  cublasHandle_t handle_ = nullptr;
};

TEST_P(CublasCompute, Fp32MatchesTheReferenceBitForBit) {
  const auto [ta, tb] = GetParam();
  const int m = 5, n = 3, k = 4;
  Matrix a = ta == CUBLAS_OP_N ? Matrix(m, k, m + 2, 1) : Matrix(k, m, k + 3, 1);
  Matrix b = tb == CUBLAS_OP_N ? Matrix(k, n, k + 1, 2) : Matrix(n, k, n + 4, 2);
  for (float beta : {0.0f, 1.0f}) {
    // C holds NaN everywhere with beta == 0: it must not be read. With beta == 1 it holds 2s.
    Matrix c(m, n, m + 3, 0);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) c.data[size_t(j) * c.ld + i] = beta == 0 ? kNaN : 2.0f;
    }
    const float alpha = 1.0f;
    ASSERT_EQ(cublasGemmEx(handle_, ta, tb, m, n, k, &alpha, a.data.data(), CUDA_R_32F, a.ld,
                           b.data.data(), CUDA_R_32F, b.ld, &beta, c.data.data(), CUDA_R_32F, c.ld,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        const float want = reference(a, ta, b, tb, i, j, k) + beta * 2.0f;
        EXPECT_EQ(c.at(i, j), want) << "C(" << i << ", " << j << ") beta " << beta;
      }
      for (int i = m; i < c.ld; ++i) EXPECT_TRUE(std::isnan(c.data[size_t(j) * c.ld + i]));
    }
  }
}

TEST_P(CublasCompute, Bf16IsWithinOneRounding) {
  const auto [ta, tb] = GetParam();
  const int m = 6, n = 5, k = 33;
  Matrix a = ta == CUBLAS_OP_N ? Matrix(m, k, m + 1, 3) : Matrix(k, m, k + 2, 3);
  Matrix b = tb == CUBLAS_OP_N ? Matrix(k, n, k + 2, 4) : Matrix(n, k, n + 1, 4);
  auto to_bf16 = [](const Matrix& x) {
    std::vector<__nv_bfloat16> out(x.data.size());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = __float2bfloat16_rn(std::isnan(x.data[i]) ? kNaN : x.data[i] * 1.37f);
    }
    return out;
  };
  std::vector<__nv_bfloat16> ab = to_bf16(a), bb = to_bf16(b);
  std::vector<__nv_bfloat16> cb(size_t(m) * n);
  const float alpha = 1.0f, beta = 0.0f;
  // One rounding per store needs reductions in the compute type (cublas_math_test.cpp has the
  // other kind).
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(handle_, ta, tb, m, n, k, &alpha, ab.data(), CUDA_R_16BF, a.ld, bb.data(),
                         CUDA_R_16BF, b.ld, &beta, cb.data(), CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double want = 0;
      for (int p = 0; p < k; ++p) {
        const size_t ia = ta == CUBLAS_OP_N ? size_t(p) * a.ld + i : size_t(i) * a.ld + p;
        const size_t ib = tb == CUBLAS_OP_N ? size_t(j) * b.ld + p : size_t(p) * b.ld + j;
        want += double(__bfloat162float(ab[ia])) * double(__bfloat162float(bb[ib]));
      }
      const double got = __bfloat162float(cb[size_t(j) * m + i]);
      EXPECT_LE(std::abs(got - want), std::ldexp(std::abs(want), -8) + 1e-6) << i << ", " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transposes, CublasCompute,
                         ::testing::Combine(::testing::Values(CUBLAS_OP_N, CUBLAS_OP_T),
                                            ::testing::Values(CUBLAS_OP_N, CUBLAS_OP_T)));

TEST(CublasBatched, SharedOperandAndFootprint) {
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const int m = 2, n = 2, k = 3, batch = 3;
  std::vector<float> a(size_t(m) * k * batch), b(size_t(k) * n), c(size_t(m) * n * batch, kNaN);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 5);
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 3) - 1;
  const float alpha = 1.0f, beta = 0.0f;
  fobmodel::fake::enqueued().clear();
  ASSERT_EQ(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(),
                                       CUDA_R_32F, m, m * k, b.data(), CUDA_R_32F, k, 0, &beta,
                                       c.data(), CUDA_R_32F, m, m * n, batch, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  for (int s = 0; s < batch; ++s) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        float want = 0;
        for (int p = 0; p < k; ++p) want += a[size_t(s) * m * k + size_t(p) * m + i] * b[j * k + p];
        EXPECT_EQ(c[size_t(s) * m * n + size_t(j) * m + i], want);
      }
    }
  }
  // A per member, B once (stride 0), C written per member and not read (beta == 0).
  const auto& ops = fobmodel::fake::enqueued();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].activity, fobmodel::Activity::kernel);
  EXPECT_NE(ops[0].correlation, 0u);
  const auto& f = ops[0].footprint;
  ASSERT_EQ(f.size(), size_t(batch + 1 + batch));
  EXPECT_EQ(f[1].base, a.data() + m * k);
  EXPECT_EQ(f[1].width, m * sizeof(float));
  EXPECT_EQ(f[1].rows, size_t(k));
  EXPECT_EQ(f[1].pitch, m * sizeof(float));
  EXPECT_EQ(f[3].base, b.data());
  EXPECT_FALSE(f[3].write);
  EXPECT_TRUE(f[4].write);
  EXPECT_EQ(
      cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(),
                                 CUDA_R_32F, m, m * k, b.data(), CUDA_R_32F, k, 0, &beta, c.data(),
                                 CUDA_R_32F, m, m * n, -1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_INVALID_VALUE);
  cublasDestroy(handle);
}

TEST(CublasBatched, OverlappingOutputsAreReported) {
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  std::vector<float> a(64, 1.0f), c(64, 0.0f);
  const float alpha = 1.0f, beta = 0.0f;
  fobmodel::fake::reported().clear();
  // Members one column apart with ldc 4 but n = 2 columns each: member 1's first column is
  // member 0's second.
  ASSERT_EQ(
      cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &alpha, a.data(),
                                 CUDA_R_32F, 4, 0, a.data(), CUDA_R_32F, 2, 0, &beta, c.data(),
                                 CUDA_R_32F, 4, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(fobmodel::fake::reported().size(), 1u);
  EXPECT_NE(fobmodel::fake::reported()[0].find("batch members 0 and 1"), std::string::npos);
  // Heads side by side in one row-major buffer: interleaved columns, no shared element.
  fobmodel::fake::reported().clear();
  ASSERT_EQ(
      cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 2, &alpha, a.data(),
                                 CUDA_R_32F, 2, 0, a.data(), CUDA_R_32F, 2, 0, &beta, c.data(),
                                 CUDA_R_32F, 8, 2, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_TRUE(fobmodel::fake::reported().empty());
  cublasDestroy(handle);
}

}  // namespace
