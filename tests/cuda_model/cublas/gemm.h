// The pure half of the cuBLAS model: argument validation, the ranges a GEMM touches and its
// arithmetic on the CPU. Nothing here talks to the runtime model, so it is tested on its own.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fobmodel/model.h"

namespace fobcublas {

// One cublasGemmEx (batch 1, strides unused) or cublasGemmStridedBatchedEx call, with alpha and
// beta already read from host memory (CUBLAS_POINTER_MODE_HOST, the handle's default).
struct Gemm {
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  int m = 0, n = 0, k = 0;
  const void* alpha = nullptr;  // host scalars of the scale type, read only by validate()
  const void* beta = nullptr;
  const void* a = nullptr;
  cudaDataType atype = CUDA_R_32F;
  int lda = 0;
  long long stride_a = 0;
  const void* b = nullptr;
  cudaDataType btype = CUDA_R_32F;
  int ldb = 0;
  long long stride_b = 0;
  void* c = nullptr;
  cudaDataType ctype = CUDA_R_32F;
  int ldc = 0;
  long long stride_c = 0;
  int batch = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;
  int math = CUBLAS_DEFAULT_MATH;  // the handle's cublasSetMathMode value
  // Filled by validate(): the scalars as the scale type gives them.
  double alpha_value = 0, beta_value = 0;
};

// The documented checks of cublasGemmEx / cublasGemmStridedBatchedEx, in the order the
// documentation lists them. On failure *why says which rule.
cublasStatus_t validate(Gemm& g, std::string* why);

// A combination cuBLAS supports but the model does not compute (integer, complex and fp16-compute
// GEMMs, which the cuda backend never asks for): validate() has accepted it.
bool modelled(const Gemm& g);

// Every range the GEMM reads and writes, as the leading dimensions and strides address them:
// A and B read, C read (unless beta == 0) and written, one entry per batch member (one for an
// operand whose stride is 0).
std::vector<fobmodel::Footprint> footprint(const Gemm& g);

// Whether two members of a strided batch write the same element of C: undefined on a GPU (the
// members run in any order), so the model reports it. Returns the first pair in *first, *second.
bool batch_writes_overlap(const Gemm& g, int* first, int* second);

// The compute type the GEMM runs with: computeType, except that a math mode that speeds up
// "single precision routines" (#cublasmath-t) turns CUBLAS_COMPUTE_32F with fp32 operands and
// output into its fast type (CUBLAS_TF32_TENSOR_OP_MATH: _FAST_TF32; the deprecated
// CUBLAS_TENSOR_OP_MATH: _FAST_16F; CUBLAS_FP32_EMULATED_BF16X9_MATH: _EMULATED_16BFX9).
cublasComputeType_t effective_compute(const Gemm& g);
// "CUBLAS_COMPUTE_32F_FAST_TF32" without its prefix: "32F_FAST_TF32".
const char* compute_name(cublasComputeType_t compute);
// Whether the GEMM reduces in its output type: the handle's math mode lacks
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION and C is bf16 or fp16, narrower than the fp32
// compute type.
bool reduces_in_output_type(const Gemm& g);

// What running the GEMM saw of its operands: whether every element of A, and of B, that it read
// (op(A) is m x k, op(B) k x n, every batch member) is an integer.
struct Operands {
  bool a_integral = true;
  bool b_integral = true;
};

// C = alpha * op(A) op(B) + beta * C for every batch member, column-major, with BLAS: fp32
// accumulation for fp32/bf16/fp16 inputs and fp64 for fp64, bf16/fp16 outputs rounded to nearest
// even. The fast compute types first round every A and B element to what they allow (TF32,
// fp16, bf16), and a GEMM that reduces in its output type does so in the worst way allowed: two
// halves of K, each partial sum rounded to C's type, then summed and rounded again. beta == 0
// never reads C.
Operands compute(const Gemm& g);

size_t type_bytes(cudaDataType type);
const char* type_name(cudaDataType type);

}  // namespace fobcublas
