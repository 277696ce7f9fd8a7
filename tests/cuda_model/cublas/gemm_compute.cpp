// The model's GEMM arithmetic: BLAS on the stream's thread. cuBLAS with CUBLAS_COMPUTE_32F
// accumulates bf16/fp16 products in fp32 and stores C rounded to its type (#cublasgemmex, the
// computeType table), so the model widens the inputs to fp32, multiplies with sgemm and rounds
// once on the store, to nearest even as __float2bfloat16_rn / __float2half_rn do. Where the
// documentation allows less, the model does the least it allows, so that a result that only
// holds by luck on a GPU fails here:
//  - the fast compute types round every input to the narrower type first
//    (CUBLAS_COMPUTE_32F_FAST_TF32: "Allows the library to use Tensor Cores with TF32 compute for
//    32-bit floating point input and output matrices. Note that input conversions round to
//    nearest even"; _FAST_16F and _FAST_16BF: "automatic down-conversion" to half / bfloat16,
//    #cublascomputetype-t);
//  - unless the handle sets CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION ("Forces any
//    reductions during matrix multiplications to use the accumulator type (that is, compute
//    type) and not the output type in case of mixed precision routines where output type
//    precision is less than the compute type precision", #cublasmath-t), a bf16/fp16 output is
//    reduced in its own type: split-K in two halves whose partial sums are rounded to C's type,
//    then summed and rounded again.
#include <cblas.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
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

// `value` rounded to `type` (to nearest even) and widened back.
float in_type(float value, cudaDataType type) {
  switch (type) {
    case CUDA_R_16BF:
      return __bfloat162float(__float2bfloat16_rn(value));
    case CUDA_R_16F:
      return __half2float(__float2half_rn(value));
    default:
      return value;
  }
}

// TF32: fp32's sign and 8-bit exponent with 10 explicit mantissa bits, rounded to nearest even
// (the 13 low bits go; a tie keeps the even one). Infinities and NaNs pass unchanged.
float to_tf32(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return value;
  bits += 0x0fffu + ((bits >> 13) & 1u);
  bits &= ~0x1fffu;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// What the compute type does to each input element before it is multiplied.
float narrow_input(float value, cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return to_tf32(value);
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return in_type(value, CUDA_R_16F);
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return in_type(value, CUDA_R_16BF);
    default:
      return value;
  }
}

bool narrows_inputs(cublasComputeType_t compute) {
  return compute == CUBLAS_COMPUTE_32F_FAST_TF32 || compute == CUBLAS_COMPUTE_32F_FAST_16F ||
         compute == CUBLAS_COMPUTE_32F_FAST_16BF;
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

// Whether every element of a stored rows x cols matrix is an integer (finite, no fraction).
bool integral(const void* base, cudaDataType type, int rows, int cols, int ld) {
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      const size_t at = static_cast<size_t>(j) * ld + i;
      const double x = type == CUDA_R_64F ? static_cast<const double*>(base)[at]
                                          : static_cast<double>(load(base, type, at));
      if (!std::isfinite(x) || std::trunc(x) != x) return false;
    }
  }
  return true;
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

// The widened operands of one member, as dense column-major copies.
struct Widened {
  std::vector<float> a, b;
  int ra = 0, rb = 0;  // their leading dimensions: stored rows
};

Widened widen_operands(const Gemm& g, const void* a, const void* b) {
  const bool na = g.transa == CUBLAS_OP_N, nb = g.transb == CUBLAS_OP_N;
  Widened w;
  w.ra = na ? g.m : g.k;
  w.rb = nb ? g.k : g.n;
  w.a = widen(a, g.atype, w.ra, na ? g.k : g.m, g.lda);
  w.b = widen(b, g.btype, w.rb, nb ? g.n : g.k, g.ldb);
  const cublasComputeType_t compute = effective_compute(g);
  if (narrows_inputs(compute)) {
    for (float& x : w.a) x = narrow_input(x, compute);
    for (float& x : w.b) x = narrow_input(x, compute);
  }
  return w;
}

// alpha * op(A) op(B) over K's elements [k0, k0 + k) into the dense m x n `out`.
void partial_product(const Gemm& g, const Widened& w, int k0, int k, std::vector<float>& out) {
  const bool na = g.transa == CUBLAS_OP_N, nb = g.transb == CUBLAS_OP_N;
  // Along K, A's columns (op N) or rows (op T) and B's rows (op N) or columns (op T).
  const float* a = w.a.data() + (na ? static_cast<size_t>(k0) * w.ra : static_cast<size_t>(k0));
  const float* b = w.b.data() + (nb ? static_cast<size_t>(k0) : static_cast<size_t>(k0) * w.rb);
  cblas_sgemm(CblasColMajor, blas_op(g.transa), blas_op(g.transb), g.m, g.n, k,
              static_cast<float>(g.alpha_value), a, std::max(1, w.ra), b, std::max(1, w.rb), 0.0f,
              out.data(), std::max(1, g.m));
}

// One member with bf16/fp16 operands or output, or with inputs the compute type narrows: fp32
// copies, sgemm, one rounding per store; reducing in the output type, two partial products
// rounded to C's type before they are summed and the sum rounded.
void gemm_widened(const Gemm& g, const void* a, const void* b, void* c) {
  const Widened w = widen_operands(g, a, b);
  const size_t cells = static_cast<size_t>(g.m) * g.n;
  const std::vector<float> old_c =
      g.beta_value == 0 ? std::vector<float>(cells) : widen(c, g.ctype, g.m, g.n, g.ldc);
  std::vector<float> sum(cells);
  if (reduces_in_output_type(g)) {
    const int half = g.k / 2;
    std::vector<float> first(cells), second(cells);
    partial_product(g, w, 0, half, first);
    partial_product(g, w, half, g.k - half, second);
    for (size_t i = 0; i < cells; ++i) {
      sum[i] = in_type(first[i], g.ctype) + in_type(second[i], g.ctype);
    }
  } else {
    partial_product(g, w, 0, g.k, sum);
  }
  const auto beta = static_cast<float>(g.beta_value);
  for (int j = 0; j < g.n; ++j) {
    for (int i = 0; i < g.m; ++i) {
      const size_t at = static_cast<size_t>(j) * g.m + i;
      store(c, g.ctype, static_cast<size_t>(j) * g.ldc + i, sum[at] + beta * old_c[at]);
    }
  }
}

const char* at(const void* base, long long stride, int i, size_t elem) {
  return static_cast<const char*>(base) +
         static_cast<long long>(i) * stride * static_cast<long long>(elem);
}

}  // namespace

Operands compute(const Gemm& g) {
  Operands seen;
  if (g.m == 0 || g.n == 0) return seen;
  const size_t ea = type_bytes(g.atype), eb = type_bytes(g.btype), ec = type_bytes(g.ctype);
  const bool na = g.transa == CUBLAS_OP_N, nb = g.transb == CUBLAS_OP_N;
  const bool same_fp32 =
      g.atype == CUDA_R_32F && g.ctype == CUDA_R_32F && !narrows_inputs(effective_compute(g));
  for (int i = 0; i < g.batch; ++i) {
    const void* a = at(g.a, g.stride_a, i, ea);
    const void* b = at(g.b, g.stride_b, i, eb);
    void* c = const_cast<char*>(at(g.c, g.stride_c, i, ec));
    seen.a_integral =
        seen.a_integral && integral(a, g.atype, na ? g.m : g.k, na ? g.k : g.m, g.lda);
    seen.b_integral =
        seen.b_integral && integral(b, g.btype, nb ? g.k : g.n, nb ? g.n : g.k, g.ldb);
    if (g.atype == CUDA_R_64F) {
      gemm_same_type(g, static_cast<const double*>(a), static_cast<const double*>(b),
                     static_cast<double*>(c));
    } else if (same_fp32) {
      gemm_same_type(g, static_cast<const float*>(a), static_cast<const float*>(b),
                     static_cast<float*>(c));
    } else {
      gemm_widened(g, a, b, c);
    }
  }
  return seen;
}

cublasComputeType_t effective_compute(const Gemm& g) {
  const bool single = g.compute == CUBLAS_COMPUTE_32F && g.atype == CUDA_R_32F &&
                      g.btype == CUDA_R_32F && g.ctype == CUDA_R_32F;
  if (!single) return g.compute;
  switch (g.math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
    case CUBLAS_TF32_TENSOR_OP_MATH:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case CUBLAS_TENSOR_OP_MATH:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case CUBLAS_FP32_EMULATED_BF16X9_MATH:
      return CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
    default:
      return g.compute;
  }
}

bool reduces_in_output_type(const Gemm& g) {
  return (g.math & CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) == 0 &&
         (g.ctype == CUDA_R_16BF || g.ctype == CUDA_R_16F);
}

}  // namespace fobcublas
