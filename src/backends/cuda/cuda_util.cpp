#include "cuda_util.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <unistd.h>

#include <chrono>

namespace fob {

void Checker::fail(const std::string& what, const std::string& why) const {
  throw RuntimeFault("rank " + std::to_string(rank_) + ": " + what + ": " + why);
}

cudaDataType_t blas_type(DType d) {
  switch (d) {
    case DType::fp32:
      return CUDA_R_32F;
    case DType::fp64:
      return CUDA_R_64F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::fp16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::fp32:
      return ncclFloat32;
    case DType::fp64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
  }
  return ncclFloat32;
}

void to_device_type(DType d, const double* in, int64_t n, void* out) {
  for (int64_t i = 0; i < n; ++i) {
    switch (d) {
      case DType::fp32:
        static_cast<float*>(out)[i] = static_cast<float>(in[i]);
        break;
      case DType::fp64:
        static_cast<double*>(out)[i] = in[i];
        break;
      case DType::bf16:
        static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16(static_cast<float>(in[i]));
        break;
      case DType::fp16:
        static_cast<__half*>(out)[i] = __float2half(static_cast<float>(in[i]));
        break;
    }
  }
}

double element_as_double(DType d, const void* data, int64_t i) {
  switch (d) {
    case DType::fp32:
      return static_cast<const float*>(data)[i];
    case DType::fp64:
      return static_cast<const double*>(data)[i];
    case DType::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case DType::fp16:
      return __half2float(static_cast<const __half*>(data)[i]);
  }
  return 0;
}

void copy_blocks(const Checker& check, size_t max_pitch, const Blocks& b, cudaMemcpyKind kind,
                 cudaStream_t stream, const char* what) {
  if (b.dst_pitch <= max_pitch && b.src_pitch <= max_pitch) {
    check.cuda(
        cudaMemcpy2DAsync(b.dst, b.dst_pitch, b.src, b.src_pitch, b.width, b.count, kind, stream),
        what);
    return;
  }
  for (size_t i = 0; i < b.count; ++i) {
    check.cuda(
        cudaMemcpyAsync(static_cast<char*>(b.dst) + i * b.dst_pitch,
                        static_cast<const char*>(b.src) + i * b.src_pitch, b.width, kind, stream),
        what);
  }
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace fob
