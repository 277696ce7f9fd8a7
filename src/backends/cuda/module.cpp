// The cuda backend module's entry point (src/backends/cuda_module.h): what fobench calls after
// dlopen, and the checks of the cuBLAS and NCCL this process found.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "backends/cuda_module.h"
#include "cuda_backend.h"

namespace fob {
namespace {

// The oldest NCCL this backend supports: bfloat16 (2.10), point-to-point inside CUDA graph
// capture, and sends to the same rank within a group (loopback) all predate it. The major
// version must be the one the module was compiled against.
constexpr int kMinNcclMinor = 18;

std::string library_of(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || !info.dli_fname) return "unknown file";
  return info.dli_fname;
}

std::string version_text(int code) {
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." +
         std::to_string(code % 100);
}

std::string check_libraries() {
  int nccl = 0;
  if (ncclGetVersion(&nccl) != ncclSuccess) return "ncclGetVersion failed";
  const std::string where = library_of(reinterpret_cast<const void*>(&ncclGetVersion));
  if (nccl / 10000 != NCCL_MAJOR || nccl % 10000 / 100 < kMinNcclMinor) {
    return "NCCL " + version_text(nccl) + " (" + where + ") is not supported: this build needs " +
           std::to_string(NCCL_MAJOR) + "." + std::to_string(kMinNcclMinor) +
           " or newer within major version " + std::to_string(NCCL_MAJOR) +
           " (it was compiled against " + version_text(NCCL_VERSION_CODE) + ")";
  }
  int blas_major = 0;
  cublasGetProperty(MAJOR_VERSION, &blas_major);
  if (blas_major != CUBLAS_VER_MAJOR) {
    return "cuBLAS " + std::to_string(blas_major) + " (" +
           library_of(reinterpret_cast<const void*>(&cublasCreate_v2)) +
           ") is not the major version this build needs (" + std::to_string(CUBLAS_VER_MAJOR) + ")";
  }
  return "";
}

int device_count(std::string* error) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (error) *error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return 0;
  }
  return count;
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

std::string nccl_version() {
  int nccl = 0;
  ncclGetVersion(&nccl);
  return version_text(nccl) + " (" + library_of(reinterpret_cast<const void*>(&ncclGetVersion)) +
         ")";
}

std::string versions() {
  int runtime = 0, driver = 0, blas_major = 0, blas_minor = 0, blas_patch = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  cublasGetProperty(MAJOR_VERSION, &blas_major);
  cublasGetProperty(MINOR_VERSION, &blas_minor);
  cublasGetProperty(PATCH_LEVEL, &blas_patch);
  const std::string driver_text =
      driver ? std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10)
             : "none (no GPU driver on this machine)";
  return "CUDA runtime " + std::to_string(runtime / 1000) + "." +
         std::to_string((runtime % 1000) / 10) + " (static), driver " + driver_text + ", cuBLAS " +
         std::to_string(blas_major) + "." + std::to_string(blas_minor) + "." +
         std::to_string(blas_patch) + " (" +
         library_of(reinterpret_cast<const void*>(&cublasCreate_v2)) + "), NCCL " + nccl_version();
}

const CudaModuleApi kApi = {.abi = kCudaModuleAbi,
                            .check_libraries = check_libraries,
                            .device_count = device_count,
                            .make_backend = make_backend,
                            .versions = versions,
                            .nccl_version = nccl_version};

}  // namespace
}  // namespace fob

extern "C" __attribute__((visibility("default"))) const fob::CudaModuleApi* fob_cuda_module() {
  return &fob::kApi;
}
