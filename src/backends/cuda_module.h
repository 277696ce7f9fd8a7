// The boundary between fobench and its cuda backend, which is a module (libfob_cuda.so) loaded
// with dlopen only when the cuda backend is asked for: a machine without cuBLAS or NCCL still
// runs everything else, and says exactly which library is missing when cuda is asked for.
// Both sides are built together by one compiler, so C++ types cross it.
#pragma once

#include <memory>
#include <string>

#include "fob/backend.h"

namespace fob {

inline constexpr int kCudaModuleAbi = 2;

struct CudaModuleApi {
  int abi = kCudaModuleAbi;
  // "" when the cuBLAS and NCCL the module was loaded with are ones it supports, else why not.
  std::string (*check_libraries)() = nullptr;
  // The devices the CUDA runtime sees; on failure 0, with the CUDA error in *error.
  int (*device_count)(std::string* error) = nullptr;
  std::unique_ptr<Backend> (*make_backend)(const BackendOptions& options) = nullptr;
  // CUDA runtime, driver, cuBLAS and NCCL versions, and the files cuBLAS and NCCL came from.
  std::string (*versions)() = nullptr;
  // NCCL's version and the file it came from: what /system nccl_version records.
  std::string (*nccl_version)() = nullptr;
};

}  // namespace fob

// The module's one exported symbol.
extern "C" const fob::CudaModuleApi* fob_cuda_module();
