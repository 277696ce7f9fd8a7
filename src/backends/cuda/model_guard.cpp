#include "model_guard.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <string>

namespace fob {
namespace {

#ifdef FOB_CUDA_MODEL
constexpr bool kOnModel = true;
#else
constexpr bool kOnModel = false;
#endif

// Whether the loaded library at `path` is one of the model's.
bool is_model_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!handle) return false;
  const bool model = dlsym(handle, "fobmodel_identity") != nullptr;
  dlclose(handle);
  return model;
}

std::string mismatch(const char* what, const std::string& path) {
  return kOnModel ? std::string("this is the cuda model's build of the module, but ") + what +
                        " was found in " + path +
                        ", which is not the model's: run it with the model's library folder "
                        "first on LD_LIBRARY_PATH"
                  : std::string(what) + " was found in " + path +
                        ", which is the cuda model's (tests/cuda_model), not NVIDIA's: take the "
                        "model's folder off LD_LIBRARY_PATH, or run the model's build of the "
                        "module (FOB_CUDA_MODULE)";
}

}  // namespace

std::string library_of(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || !info.dli_fname) return "unknown file";
  return info.dli_fname;
}

std::string foreign_cuda_libraries() {
  struct Library {
    const char* what;
    const void* symbol;
  };
  const Library libraries[] = {
      {"cuBLAS", reinterpret_cast<const void*>(&cublasCreate_v2)},
      {"NCCL", reinterpret_cast<const void*>(&ncclGetVersion)},
      // NVIDIA's runtime is linked into the module statically; the model's is a library.
      {kOnModel ? "the CUDA runtime" : nullptr, reinterpret_cast<const void*>(&cudaGetDeviceCount)},
  };
  for (const Library& lib : libraries) {
    if (!lib.what) continue;
    const std::string path = library_of(lib.symbol);
    if (is_model_library(path) != kOnModel) return mismatch(lib.what, path);
  }
  // The driver is loaded by name, as the runtime loads it.
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    const bool model = dlsym(driver, "fobmodel_identity") != nullptr;
    std::string path = "libcuda.so.1";
    if (const void* init = dlsym(driver, "cuInit")) path = library_of(init);
    dlclose(driver);
    if (model != kOnModel) return mismatch("the CUDA driver", path);
  }
  return "";
}

}  // namespace fob
