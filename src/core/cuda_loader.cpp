// Finds and loads the cuda backend module (src/backends/cuda_module.h), once per process.
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "backends/cuda_module.h"
#include "fob/backend.h"

namespace fob {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// FOB_CUDA_MODULE when set, else libfob_cuda.so beside the library holding this code
// (libfobcore.so): the build directory, or a bundle's lib/ (scripts/gpu_bundle.sh).
std::string module_path() {
  if (const char* env = std::getenv("FOB_CUDA_MODULE"); env && *env) return env;
  Dl_info info{};
  std::string dir = ".";
  if (dladdr(reinterpret_cast<void*>(&module_path), &info) != 0 && info.dli_fname) {
    dir = info.dli_fname;
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  }
  return dir + "/libfob_cuda.so";
}

struct Module {
  const CudaModuleApi* api = nullptr;
  std::string error;  // why it is not loaded
};

Module load() {
  Module m;
  const std::string path = module_path();
#ifndef FOB_CUDA_MODULE_BUILT
  if (!std::getenv("FOB_CUDA_MODULE")) {
    m.error =
        "not built (configure with -DFOB_CUDA=AUTO|ON where the CUDA toolkit, cuBLAS and NCCL "
        "are found)";
    return m;
  }
#endif
  if (!exists(path)) {
    m.error = "its module " + path + " is missing";
    return m;
  }
  // Never unloaded: the CUDA libraries do not support it, and the process ends soon anyway.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    m.error = "its module " + path + " cannot be loaded: " + (why ? why : "unknown error") +
              " (the cuda backend needs cuBLAS, cuBLASLt and NCCL from the CUDA toolkit or the "
              "nvidia-* Python wheels on the library path)";
    return m;
  }
  auto entry = reinterpret_cast<const CudaModuleApi* (*)()>(dlsym(handle, "fob_cuda_module"));
  const CudaModuleApi* api = entry ? entry() : nullptr;
  if (!api || api->abi != kCudaModuleAbi) {
    m.error = "its module " + path + " is from another fobench build (interface mismatch)";
    return m;
  }
  m.error = api->check_libraries();
  if (m.error.empty()) m.api = api;
  return m;
}

const Module& module() {
  static const Module loaded = load();
  return loaded;
}

bool gpu_driver_present() {
  return exists("/dev/nvidiactl") || exists("/proc/driver/nvidia/version");
}

}  // namespace

bool cuda_backend_built() {
#ifdef FOB_CUDA_MODULE_BUILT
  return true;
#else
  return std::getenv("FOB_CUDA_MODULE") != nullptr;
#endif
}

CudaStatus cuda_status() {
  CudaStatus status;
  status.gpu_present = gpu_driver_present();
  const Module& m = module();
  if (!m.api) {
    status.error = "cuda backend: " + m.error;
    return status;
  }
  status.loaded = true;
  status.devices = m.api->device_count(&status.error);
  return status;
}

int cuda_device_count() {
  return cuda_status().devices;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  const Module& m = module();
  if (!m.api) {
    throw InputError("backend: 'cuda' is not available: " + m.error + "; valid here: auto, cpu");
  }
  return m.api->make_backend(options);
}

std::string cuda_versions() {
  const Module& m = module();
  return m.api ? m.api->versions() : "cuda backend: " + m.error;
}

std::string nccl_version() {
  const Module& m = module();
  return m.api ? m.api->nccl_version() : "cuda backend: " + m.error;
}

}  // namespace fob
