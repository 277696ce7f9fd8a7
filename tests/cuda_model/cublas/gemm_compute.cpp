// The model's GEMM arithmetic: BLAS on the stream's thread. cuBLAS with CUBLAS_COMPUTE_32F
// accumulates bf16/fp16 products in fp32 and stores C rounded to its type (#cublasgemmex, the
// computeType table), so the model widens the inputs to fp32, multiplies with sgemm and rounds
// once on the store, to nearest even as __float2bfloat16_rn / __float2half_rn do.
#include <cblas.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <vector>

#include "gemm.h"

namespace fobcublas {
namespace {

float load(const void* base, cudaDataType type, size_t index) {
  switch (type) {
    case CUDA_R_16BF:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    case CUDA_R_16F:
      return __half2float(static_cast<const __half*>(base)[index]);
    default:
      return static_cast<const float*>(base)[index];
  }
}

void store(void* base, cudaDataType type, size_t index, float value) {
  switch (type) {
    case CUDA_R_16BF:
      static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(value);
      break;
    case CUDA_R_16F:
      static_cast<__half*>(base)[index] = __float2half_rn(value);
      break;
    default:
      static_cast<float*>(base)[index] = value;
      break;
  }
}

// A column-major rows x cols matrix (leading dimension ld) widened into a dense fp32 copy.
std::vector<float> widen(const void* base, cudaDataType type, int rows, int cols, int ld) {
  std::vector<float> out(static_cast<size_t>(rows) * cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      out[static_cast<size_t>(j) * rows + i] = load(base, type, static_cast<size_t>(j) * ld + i);
    }
  }
  return out;
}

CBLAS_TRANSPOSE blas_op(cublasOperation_t op) {
  // CUBLAS_OP_C is CUBLAS_OP_T for real types.
  return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

template <typename T>
void zero_columns(T* c, int m, int n, int ldc) {
  for (int j = 0; j < n; ++j) std::memset(c + static_cast<size_t>(j) * ldc, 0, sizeof(T) * m);
}

// One member, fp32 or fp64 throughout: BLAS straight on the operands. With beta == 0 C is
// cleared first, so a NaN left in C cannot reach the result ("if beta == 0, C does not have to
// be a valid input", #cublas-t-gemm).
template <typename T>
void gemm_same_type(const Gemm& g, const T* a, const T* b, T* c) {
  if (g.beta_value == 0) zero_columns(c, g.m, g.n, g.ldc);
  const T alpha = static_cast<T>(g.alpha_value), beta = static_cast<T>(g.beta_value);
  if constexpr (sizeof(T) == 4) {
    cblas_sgemm(CblasColMajor, blas_op(g.transa), blas_op(g.transb), g.m, g.n, g.k, alpha, a, g.lda,
                b, g.ldb, beta, c, g.ldc);
  } else {
    cblas_dgemm(CblasColMajor, blas_op(g.transa), blas_op(g.transb), g.m, g.n, g.k, alpha, a, g.lda,
                b, g.ldb, beta, c, g.ldc);
  }
}

// One member with bf16/fp16 operands or output: fp32 copies, sgemm, one rounding per store.
void gemm_widened(const Gemm& g, const void* a, const void* b, void* c) {
  const bool na = g.transa == CUBLAS_OP_N, nb = g.transb == CUBLAS_OP_N;
  const int ra = na ? g.m : g.k, ca = na ? g.k : g.m, rb = nb ? g.k : g.n, cb = nb ? g.n : g.k;
  const std::vector<float> wa = widen(a, g.atype, ra, ca, g.lda);
  const std::vector<float> wb = widen(b, g.btype, rb, cb, g.ldb);
  std::vector<float> wc = g.beta_value == 0 ? std::vector<float>(static_cast<size_t>(g.m) * g.n)
                                            : widen(c, g.ctype, g.m, g.n, g.ldc);
  cblas_sgemm(CblasColMajor, blas_op(g.transa), blas_op(g.transb), g.m, g.n, g.k,
              static_cast<float>(g.alpha_value), wa.data(), std::max(1, ra), wb.data(),
              std::max(1, rb), static_cast<float>(g.beta_value), wc.data(), std::max(1, g.m));
  for (int j = 0; j < g.n; ++j) {
    for (int i = 0; i < g.m; ++i) {
      store(c, g.ctype, static_cast<size_t>(j) * g.ldc + i, wc[static_cast<size_t>(j) * g.m + i]);
    }
  }
}

const char* at(const void* base, long long stride, int i, size_t elem) {
  return static_cast<const char*>(base) +
         static_cast<long long>(i) * stride * static_cast<long long>(elem);
}

}  // namespace

void compute(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  const size_t ea = type_bytes(g.atype), eb = type_bytes(g.btype), ec = type_bytes(g.ctype);
  for (int i = 0; i < g.batch; ++i) {
    const void* a = at(g.a, g.stride_a, i, ea);
    const void* b = at(g.b, g.stride_b, i, eb);
    void* c = const_cast<char*>(at(g.c, g.stride_c, i, ec));
    if (g.atype == CUDA_R_64F) {
      gemm_same_type(g, static_cast<const double*>(a), static_cast<const double*>(b),
                     static_cast<double*>(c));
    } else if (g.atype == CUDA_R_32F && g.ctype == CUDA_R_32F) {
      gemm_same_type(g, static_cast<const float*>(a), static_cast<const float*>(b),
                     static_cast<float*>(c));
    } else {
      gemm_widened(g, a, b, c);
    }
  }
}

}  // namespace fobcublas
