// Small pieces the cuda backend's files share: errors that name the rank, and the mapping of
// fobench's dtypes to CUDA, cuBLAS and NCCL types and host values.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "fob/types.h"

namespace fob {

// Errors name the rank: a fault on one of 512 GPUs must say which.
class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}
  void cuda(cudaError_t e, const char* what) const {
    if (e != cudaSuccess) fail(what, cudaGetErrorString(e));
  }
  void blas(cublasStatus_t s, const char* what) const {
    if (s != CUBLAS_STATUS_SUCCESS) fail(what, cublasGetStatusString(s));
  }
  void nccl(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) fail(what, ncclGetErrorString(r));
  }
  [[noreturn]] void fail(const std::string& what, const std::string& why) const;

 private:
  int rank_;
};

cudaDataType_t blas_type(DType d);
ncclDataType_t nccl_type(DType d);

// Host-side element conversions for inputs, verification and host-staged reductions.
void to_device_type(DType d, const double* in, int64_t n, void* out);
double element_as_double(DType d, const void* data, int64_t i);

// `count` blocks of `width` bytes, `src_pitch` bytes apart in src and `dst_pitch` apart in dst.
struct Blocks {
  void* dst = nullptr;
  size_t dst_pitch = 0;
  const void* src = nullptr;
  size_t src_pitch = 0;
  size_t width = 0;
  size_t count = 0;
};
// Queues the copy of `b` on `stream`: one cudaMemcpy2DAsync where both pitches are within
// `max_pitch` (cudaDeviceProp::memPitch, which the 2-D copies refuse to pass: blocks more than
// 2 GiB apart), else one copy per block.
void copy_blocks(const Checker& check, size_t max_pitch, const Blocks& b, cudaMemcpyKind kind,
                 cudaStream_t stream, const char* what);

double now_seconds();
std::string hostname();

}  // namespace fob
