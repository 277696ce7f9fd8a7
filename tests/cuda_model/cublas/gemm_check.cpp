// Validation and footprints of the model's GEMMs. The rules cite the cuBLAS Library documentation
// for CUDA 13 (https://docs.nvidia.com/cuda/cublas/), by section anchor.
#include <algorithm>
#include <cstdlib>

#include "gemm.h"

namespace fobcublas {
namespace {

bool is_32f_compute(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC ||
         c == CUBLAS_COMPUTE_32F_FAST_16F || c == CUBLAS_COMPUTE_32F_FAST_16BF ||
         c == CUBLAS_COMPUTE_32F_FAST_TF32 || c == CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
}
bool is_64f_compute(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_64F || c == CUBLAS_COMPUTE_64F_PEDANTIC ||
         c == CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
}
bool is_known_compute(cublasComputeType_t c) {
  return is_32f_compute(c) || is_64f_compute(c) || c == CUBLAS_COMPUTE_16F ||
         c == CUBLAS_COMPUTE_16F_PEDANTIC || c == CUBLAS_COMPUTE_32I ||
         c == CUBLAS_COMPUTE_32I_PEDANTIC;
}
bool is_fast_32f(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_32F_FAST_16F || c == CUBLAS_COMPUTE_32F_FAST_16BF ||
         c == CUBLAS_COMPUTE_32F_FAST_TF32 || c == CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
}

// The output types cublasGemmEx knows at all ("Ctype is not one of the supported types" is
// CUBLAS_STATUS_INVALID_VALUE, #cublasgemmex return values).
bool is_known_ctype(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
    case CUDA_R_32F:
    case CUDA_R_64F:
    case CUDA_R_32I:
    case CUDA_C_32F:
    case CUDA_C_64F:
      return true;
    default:
      return false;
  }
}

// CUBLAS_COMPUTE_32F and _PEDANTIC's rows of the table supported_combination follows.
bool supported_32f_combination(cudaDataType ab, cudaDataType c) {
  if (ab == CUDA_R_16BF || ab == CUDA_R_16F) return c == ab || c == CUDA_R_32F;
  if (ab == CUDA_R_8I) return c == CUDA_R_32F;
  if (ab == CUDA_R_32F) return c == CUDA_R_32F;
  if (ab == CUDA_C_8I || ab == CUDA_C_32F) return c == CUDA_C_32F;
  return false;
}

// The table of supported (computeType, Atype/Btype, Ctype) combinations in #cublasgemmex, which
// #cublasgemmstridedbatchedex shares. Anything else is CUBLAS_STATUS_NOT_SUPPORTED.
bool supported_combination(const Gemm& g) {
  if (g.atype != g.btype) return false;
  const cudaDataType ab = g.atype, c = g.ctype;
  const cublasComputeType_t ct = g.compute;
  if (ct == CUBLAS_COMPUTE_16F || ct == CUBLAS_COMPUTE_16F_PEDANTIC) {
    return ab == CUDA_R_16F && c == CUDA_R_16F;
  }
  if (ct == CUBLAS_COMPUTE_32I || ct == CUBLAS_COMPUTE_32I_PEDANTIC) {
    return ab == CUDA_R_8I && c == CUDA_R_32I;
  }
  if (is_64f_compute(ct)) {
    return (ab == CUDA_R_64F && c == CUDA_R_64F) || (ab == CUDA_C_64F && c == CUDA_C_64F);
  }
  if (is_fast_32f(ct)) {
    return (ab == CUDA_R_32F && c == CUDA_R_32F) || (ab == CUDA_C_32F && c == CUDA_C_32F);
  }
  return supported_32f_combination(ab, c);
}

// cublasGemmAlgo_t values: CUBLAS_GEMM_DEFAULT, ALGO0..23, the (deprecated, still accepted)
// *_TENSOR_OP values and CUBLAS_GEMM_AUTOTUNE; another value is "the algorithm, algo is not
// supported": CUBLAS_STATUS_NOT_SUPPORTED (#cublasgemmex, #cublasgemmalgo-t).
bool known_algo(cublasGemmAlgo_t a) {
  const int v = static_cast<int>(a);
  return v == -1 || (v >= 0 && v <= 23) || (v >= 99 && v <= 115) || v == 999;
}

bool valid_op(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

cublasStatus_t fail(cublasStatus_t status, std::string* why, std::string text) {
  *why = std::move(text);
  return status;
}

// The scalars in the scale type of the compute type (#cublasgemmex, the table's "scaleType").
void read_scalars(Gemm& g) {
  if (is_64f_compute(g.compute)) {
    g.alpha_value = *static_cast<const double*>(g.alpha);
    g.beta_value = *static_cast<const double*>(g.beta);
  } else if (is_32f_compute(g.compute)) {
    g.alpha_value = *static_cast<const float*>(g.alpha);
    g.beta_value = *static_cast<const float*>(g.beta);
  }
}

// Stored rows and columns of A and B: op(A) is m x k and op(B) k x n, so transposed operands are
// stored k x m and n x k (#cublasgemmex, the lda and ldb parameters).
int rows_a(const Gemm& g) {
  return g.transa == CUBLAS_OP_N ? g.m : g.k;
}
int cols_a(const Gemm& g) {
  return g.transa == CUBLAS_OP_N ? g.k : g.m;
}
int rows_b(const Gemm& g) {
  return g.transb == CUBLAS_OP_N ? g.k : g.n;
}
int cols_b(const Gemm& g) {
  return g.transb == CUBLAS_OP_N ? g.n : g.k;
}

}  // namespace

size_t type_bytes(cudaDataType type) {
  switch (type) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
    case CUDA_R_32I:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    case CUDA_C_64F:
      return 16;
    case CUDA_R_8I:
      return 1;
    case CUDA_C_8I:
      return 2;
    default:
      return 0;
  }
}

const char* type_name(cudaDataType type) {
  switch (type) {
    case CUDA_R_16F:
      return "CUDA_R_16F";
    case CUDA_R_16BF:
      return "CUDA_R_16BF";
    case CUDA_R_32F:
      return "CUDA_R_32F";
    case CUDA_R_64F:
      return "CUDA_R_64F";
    default:
      return "another cudaDataType";
  }
}

const char* compute_name(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
      return "16F";
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return "16F_PEDANTIC";
    case CUBLAS_COMPUTE_32F:
      return "32F";
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return "32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return "32F_FAST_16F";
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return "32F_FAST_16BF";
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return "32F_FAST_TF32";
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      return "32F_EMULATED_16BFX9";
    case CUBLAS_COMPUTE_64F:
      return "64F";
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return "64F_PEDANTIC";
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      return "64F_EMULATED_FIXEDPOINT";
    case CUBLAS_COMPUTE_32I:
      return "32I";
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      return "32I_PEDANTIC";
  }
  return "?";
}

cublasStatus_t validate(Gemm& g, std::string* why) {
  // #cublasgemmex and #cublasgemmstridedbatchedex, "Return Value": CUBLAS_STATUS_INVALID_VALUE
  // "if m < 0 or n < 0 or k < 0" (and batchCount < 0 for the strided-batched form).
  if (g.m < 0 || g.n < 0 || g.k < 0) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why, "m, n or k is negative");
  }
  if (g.batch < 0) return fail(CUBLAS_STATUS_INVALID_VALUE, why, "batchCount is negative");
  // "if transa or transb != CUBLAS_OP_N, CUBLAS_OP_C, CUBLAS_OP_T".
  if (!valid_op(g.transa) || !valid_op(g.transb)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why, "transa or transb is not N, T or C");
  }
  // "if lda < max(1, m) when transa == CUBLAS_OP_N and lda < max(1, k) otherwise", ldb likewise
  // with k and n, "or if ldc < max(1, m)".
  if (g.lda < std::max(1, rows_a(g))) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why,
                "lda " + std::to_string(g.lda) + " < max(1, " + std::to_string(rows_a(g)) + ")");
  }
  if (g.ldb < std::max(1, rows_b(g))) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why,
                "ldb " + std::to_string(g.ldb) + " < max(1, " + std::to_string(rows_b(g)) + ")");
  }
  if (g.ldc < std::max(1, g.m)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why,
                "ldc " + std::to_string(g.ldc) + " < max(1, " + std::to_string(g.m) + ")");
  }
  // "if alpha or beta are NULL".
  if (g.alpha == nullptr || g.beta == nullptr) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why, "alpha or beta is NULL");
  }
  // "Ctype is not one of the supported types", "computeType is not valid".
  if (!is_known_ctype(g.ctype)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why, "Ctype is not a supported type");
  }
  if (!is_known_compute(g.compute)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, why, "computeType is not valid");
  }
  // CUBLAS_STATUS_NOT_SUPPORTED: "the combination of the parameters Atype, Btype and Ctype or
  // the algorithm, algo is not supported".
  if (!supported_combination(g)) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, why,
                std::string("Atype ") + type_name(g.atype) + ", Btype " + type_name(g.btype) +
                    ", Ctype " + type_name(g.ctype) + " with computeType " +
                    std::to_string(static_cast<int>(g.compute)) +
                    " is not a supported combination");
  }
  if (!known_algo(g.algo)) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, why, "algo is not a supported algorithm");
  }
  read_scalars(g);
  return CUBLAS_STATUS_SUCCESS;
}

bool modelled(const Gemm& g) {
  const bool real_float = g.atype == CUDA_R_32F || g.atype == CUDA_R_16BF || g.atype == CUDA_R_16F;
  return (is_32f_compute(g.compute) && real_float) ||
         (is_64f_compute(g.compute) && g.atype == CUDA_R_64F);
}

namespace {

// One column-major matrix of `rows` x `cols` elements with leading dimension ld, as a footprint:
// a run of `rows` elements per column, ld elements apart.
void add_matrix(std::vector<fobmodel::Footprint>* out, const void* base, int rows, int cols, int ld,
                size_t elem, bool write) {
  if (rows == 0 || cols == 0) return;
  fobmodel::Footprint f;
  f.base = base;
  f.width = static_cast<size_t>(rows) * elem;
  f.rows = static_cast<size_t>(cols);
  f.pitch = static_cast<size_t>(ld) * elem;
  f.write = write;
  out->push_back(f);
}

const void* member(const void* base, long long stride, int i, size_t elem) {
  return static_cast<const char*>(base) +
         static_cast<long long>(i) * stride * static_cast<long long>(elem);
}

}  // namespace

std::vector<fobmodel::Footprint> footprint(const Gemm& g) {
  std::vector<fobmodel::Footprint> out;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return out;
  const size_t ea = type_bytes(g.atype), eb = type_bytes(g.btype), ec = type_bytes(g.ctype);
  const int na = g.stride_a == 0 ? 1 : g.batch, nb = g.stride_b == 0 ? 1 : g.batch;
  for (int i = 0; i < na; ++i) {
    add_matrix(&out, member(g.a, g.stride_a, i, ea), rows_a(g), cols_a(g), g.lda, ea, false);
  }
  for (int i = 0; i < nb; ++i) {
    add_matrix(&out, member(g.b, g.stride_b, i, eb), rows_b(g), cols_b(g), g.ldb, eb, false);
  }
  const int nc = g.stride_c == 0 ? 1 : g.batch;
  for (int i = 0; i < nc; ++i) {
    const void* c = member(g.c, g.stride_c, i, ec);
    if (g.beta_value != 0) add_matrix(&out, c, g.m, g.n, g.ldc, ec, false);
    add_matrix(&out, c, g.m, g.n, g.ldc, ec, true);
  }
  return out;
}

bool batch_writes_overlap(const Gemm& g, int* first, int* second) {
  if (g.m == 0 || g.n == 0 || g.batch < 2) return false;
  // Members i and i + delta share an element when some column offset t in (-n, n) brings the
  // start of one within m elements of the other: |delta * strideC + t * ldc| < m.
  const long long ldc = g.ldc, span = g.n - 1;
  for (int delta = 1; delta < g.batch; ++delta) {
    const long long d = static_cast<long long>(delta) * g.stride_c;
    const long long nearest = std::clamp(-d / ldc, -span, span);
    for (long long t = std::max(-span, nearest - 1); t <= std::min(span, nearest + 1); ++t) {
      if (std::llabs(d + t * ldc) < g.m) {
        *first = 0;
        *second = delta;
        return true;
      }
    }
  }
  return false;
}

}  // namespace fobcublas
