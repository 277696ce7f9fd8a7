// libcublas.so.13 of the cuda model: the cuBLAS entry points the cuda backend imports, with the
// signatures of <cublas_api.h>. Each rule cites the cuBLAS Library documentation for CUDA 13
// (https://docs.nvidia.com/cuda/cublas/) by section anchor.
#include <cublas_v2.h>
#include <cupti_driver_cbid.h>
#include <library_types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

#include "fobmodel/model.h"
#include "gemm.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  bool user_workspace = false;
  int math = CUBLAS_DEFAULT_MATH;
  int sm_target = 0;
};

namespace {

std::mutex handles_mutex;
std::unordered_set<cublasContext*> handles;

// A handle cublasCreate did not return, or one already destroyed: the real library reads freed
// memory, the model says so. A null handle is "the library was not initialized"
// (CUBLAS_STATUS_NOT_INITIALIZED in every function's return values).
cublasStatus_t check(cublasHandle_t handle, const char* call) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  std::lock_guard lock(handles_mutex);
  if (!handles.contains(handle)) {
    fobmodel::violation("cublas", std::string(call) +
                                      ": the handle was not created by cublasCreate or was "
                                      "destroyed");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t run_gemm(cublasHandle_t handle, fobcublas::Gemm& g, const char* call) {
  if (cublasStatus_t s = check(handle, call); s != CUBLAS_STATUS_SUCCESS) return s;
  std::string why;
  if (cublasStatus_t s = fobcublas::validate(g, &why); s != CUBLAS_STATUS_SUCCESS) return s;
  if (!fobcublas::modelled(g)) {
    fobmodel::violation("cublas", std::string(call) + ": " + fobcublas::type_name(g.atype) +
                                      " with this computeType is valid cuBLAS the model does "
                                      "not compute");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // "Too small workspaceSizeInBytes may cause some routines to fail with
  // CUBLAS_STATUS_ALLOC_FAILED ... 16KiB is enough to prevent" it (#cublassetworkspace): the
  // model fails every time rather than by chance.
  if (handle->user_workspace && handle->workspace_bytes < 16 * 1024 && g.m > 0 && g.n > 0) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  int first = 0, second = 0;
  if (fobcublas::batch_writes_overlap(g, &first, &second)) {
    fobmodel::violation("cublas", std::string(call) + ": batch members " + std::to_string(first) +
                                      " and " + std::to_string(second) +
                                      " write the same elements of C (strideC " +
                                      std::to_string(g.stride_c) + ", ldc " +
                                      std::to_string(g.ldc) + "): their order is undefined");
  }
  // "Quick return" cases launch nothing: no C is written when m, n or batchCount is 0.
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
  // cuBLAS launches its kernels through the driver API, so the kernel's CUPTI correlation id is
  // that of a driver launch record (what external correlation needs DRIVER activity for).
  fobmodel::ApiCall launch(fobmodel::Domain::driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                           "cuLaunchKernelEx");
  fobmodel::Op op;
  op.name = call;
  op.activity = fobmodel::Activity::kernel;
  op.footprint = fobcublas::footprint(g);
  if (handle->user_workspace && handle->workspace_bytes > 0) {
    fobmodel::Footprint w;
    w.base = handle->workspace;
    w.width = handle->workspace_bytes;
    w.pitch = handle->workspace_bytes;
    w.write = true;
    op.footprint.push_back(w);
  }
  // alpha and beta were read now, in host pointer mode (#cublassetpointermode): the caller may
  // reuse them as soon as the call returns. The math mode and SM target are read at the call too,
  // as a captured GEMM keeps them.
  g.alpha = g.beta = nullptr;
  g.math = handle->math;
  op.note = "sm_target=" + std::to_string(handle->sm_target) +
            " compute=" + fobcublas::compute_name(fobcublas::effective_compute(g)) +
            " reduced_precision_reduction=" + (fobcublas::reduces_in_output_type(g) ? "1" : "0");
  op.run = [g] {
    const fobcublas::Operands seen = fobcublas::compute(g);
    fobmodel::note_running_op(std::string("a_integral=") + (seen.a_integral ? "1" : "0") +
                              " b_integral=" + (seen.b_integral ? "1" : "0"));
  };
  // "CUBLAS_STATUS_EXECUTION_FAILED: the function failed to launch on the GPU".
  return fobmodel::enqueue(handle->stream, std::move(op)) == cudaSuccess
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_EXECUTION_FAILED;
}

// Both GEMM entry points: the arguments as one Gemm, validated, queued.
cublasStatus_t gemm_call(const char* call, cublasHandle_t handle, cublasOperation_t transa,
                         cublasOperation_t transb, int m, int n, int k, const void* alpha,
                         const void* A, cudaDataType Atype, int lda, long long strideA,
                         const void* B, cudaDataType Btype, int ldb, long long strideB,
                         const void* beta, void* C, cudaDataType Ctype, int ldc, long long strideC,
                         int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  fobcublas::Gemm g{.transa = transa,
                    .transb = transb,
                    .m = m,
                    .n = n,
                    .k = k,
                    .alpha = alpha,
                    .beta = beta,
                    .a = A,
                    .atype = Atype,
                    .lda = lda,
                    .stride_a = strideA,
                    .b = B,
                    .btype = Btype,
                    .ldb = ldb,
                    .stride_b = strideB,
                    .c = C,
                    .ctype = Ctype,
                    .ldc = ldc,
                    .stride_c = strideC,
                    .batch = batch,
                    .compute = compute,
                    .algo = algo};
  return run_gemm(handle, g, call);
}

}  // namespace

extern "C" {

// #cublascreate: CUBLAS_STATUS_INVALID_VALUE "handle == NULL".
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* context = new cublasContext();
  std::lock_guard lock(handles_mutex);
  handles.insert(context);
  *handle = context;
  return CUBLAS_STATUS_SUCCESS;
}

// #cublasdestroy: "the library was not initialized" for a handle that is not one.
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (cublasStatus_t s = check(handle, "cublasDestroy"); s != CUBLAS_STATUS_SUCCESS) return s;
  std::lock_guard lock(handles_mutex);
  handles.erase(handle);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

// #cublasgetversion: CUBLAS_STATUS_INVALID_VALUE for a NULL version.
cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (cublasStatus_t s = check(handle, "cublasGetVersion"); s != CUBLAS_STATUS_SUCCESS) return s;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

// #cublasgetproperty: CUBLAS_STATUS_INVALID_VALUE "if the type value is invalid or value == NULL".
cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// #cublassetstream: it "unconditionally resets the cuBLAS library workspace back to the default
// workspace pool".
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (cublasStatus_t s = check(handle, "cublasSetStream"); s != CUBLAS_STATUS_SUCCESS) return s;
  handle->stream = stream;
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  handle->user_workspace = false;
  return CUBLAS_STATUS_SUCCESS;
}

// #cublassetworkspace: "The workspace pointer has to be aligned to at least 256 bytes,
// otherwise CUBLAS_STATUS_INVALID_VALUE error is returned"; size 0 is allowed (no workspace).
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (cublasStatus_t s = check(handle, "cublasSetWorkspace"); s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  // A workspace that is not device memory is stricter than cuBLAS, which would fault later.
  if (bytes > 0 && fobmodel::memory_of(workspace) != fobmodel::Memory::device) {
    fobmodel::violation("memcheck", "cublasSetWorkspace: the workspace " +
                                        std::to_string(reinterpret_cast<uintptr_t>(workspace)) +
                                        " is not device memory");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  handle->user_workspace = true;
  return CUBLAS_STATUS_SUCCESS;
}

// #cublassetmathmode and #cublasmath-t: one of the modes, optionally with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION; else "an invalid value for mode was used".
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (cublasStatus_t s = check(handle, "cublasSetMathMode"); s != CUBLAS_STATUS_SUCCESS) return s;
  const int base = static_cast<int>(mode) & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  const bool known = base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
                     base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
                     base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
                     base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
  if (!known) return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = static_cast<int>(mode);
  return CUBLAS_STATUS_SUCCESS;
}

// #cublassetsmcounttarget: "When set to 0, the library returns to its default behavior. The
// input value should not exceed the device's multiprocessor count ... Negative values are not
// accepted": CUBLAS_STATUS_INVALID_VALUE, "The value of smCountTarget outside of the allowed
// range". The GEMMs' op notes carry it (sm_target=, 0: all multiprocessors).
cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int target) {
  if (cublasStatus_t s = check(handle, "cublasSetSmCountTarget"); s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  const int sms = prop.multiProcessorCount;
  if (target < 0 || target > sms) return CUBLAS_STATUS_INVALID_VALUE;
  handle->sm_target = target;
  return CUBLAS_STATUS_SUCCESS;
}

// #cublasgetstatusstring.
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "an error was detected when checking the current licensing";
  }
  return "unknown cuBLAS status";
}

// #cublasgemmex: the rules of the strided-batched form with one member.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  return gemm_call("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B,
                   Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1, computeType, algo);
}

// #cublasgemmstridedbatchedex.
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm_call("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype,
                   lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,
                   computeType, algo);
}

}  // extern "C"
