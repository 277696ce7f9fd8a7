// The cuda backend module's entry point (src/backends/cuda_module.h): what fobench calls after
// dlopen, the checks of the cuBLAS and NCCL this process found, and why the CUDA driver cannot
// be used when it cannot.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <string>

#include "backends/cuda_module.h"
#include "cuda_backend.h"
#include "model_guard.h"

namespace fob {
namespace {

// The oldest NCCL this backend supports: bfloat16 (2.10), point-to-point inside CUDA graph
// capture, and sends to the same rank within a group (loopback) all predate it. The major
// version must be the one the module was compiled against.
constexpr int kMinNcclMinor = 18;

std::string version_text(int code) {
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." +
         std::to_string(code % 100);
}

std::string check_libraries() {
  if (std::string why = foreign_cuda_libraries(); !why.empty()) return why;
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

// The CUDA driver (libcuda.so.1) this process loads, asked directly: the runtime reports a
// missing driver as "insufficient", and a stub library only by its error code.
struct Driver {
  std::string path;     // the file the loader found, "" when none
  int version = 0;      // cuDriverGetVersion, 0 when unknown
  bool stub = false;    // the CUDA toolkit's stub libcuda (cuInit: CUDA_ERROR_STUB_LIBRARY)
  std::string problem;  // why no GPU can be used through it, "" when cuInit succeeds
};

std::string cuda_version_text(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

Driver probe_driver() {
  Driver d;
  // Already loaded by the runtime when it could be; this only takes another reference.
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    d.problem = std::string("no CUDA driver: libcuda.so.1, which comes with the NVIDIA driver, ") +
                "is not on the library path (" + (why ? why : "not found") + ")";
    return d;
  }
  link_map* map = nullptr;
  d.path = dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name ? map->l_name : "";
  using InitFn = CUresult (*)(unsigned);
  using VersionFn = CUresult (*)(int*);
  using NameFn = CUresult (*)(CUresult, const char**);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto get_version = reinterpret_cast<VersionFn>(dlsym(lib, "cuDriverGetVersion"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuGetErrorName"));
  if (!init) {
    d.problem = "the file found as libcuda.so.1 (" + d.path + ") is not a CUDA driver (no cuInit)";
    return d;
  }
  const CUresult rc = init(0);
  if (get_version && get_version(&d.version) != CUDA_SUCCESS) d.version = 0;
  const std::string which = d.version ? " (CUDA " + cuda_version_text(d.version) + ")" : "";
  if (rc == CUDA_SUCCESS) {
    // The runtime linked into this module needs a driver of its CUDA version or newer.
    if (d.version && d.version < CUDART_VERSION) {
      d.problem = "the CUDA driver at " + d.path + which + " is older than the CUDA " +
                  cuda_version_text(CUDART_VERSION) + " runtime of this build";
    }
    return d;
  }
  const char* rc_name = nullptr;
  if (!name || name(rc, &rc_name) != CUDA_SUCCESS) rc_name = nullptr;
  // The stub answers every call, cuGetErrorName too, with CUDA_ERROR_STUB_LIBRARY.
  if (!rc_name && rc == CUDA_ERROR_STUB_LIBRARY) rc_name = "CUDA_ERROR_STUB_LIBRARY";
  const std::string result =
      "cuInit: " + (rc_name ? std::string(rc_name) : "error " + std::to_string(rc));
  if (rc == CUDA_ERROR_STUB_LIBRARY) {
    d.stub = true;
    d.problem = "the CUDA driver found at " + d.path +
                " is the CUDA toolkit's stub library, not a real driver (" + result +
                "): no GPU can be used";
  } else if (rc == CUDA_ERROR_NO_DEVICE) {
    d.problem = "the CUDA driver at " + d.path + which + " sees no GPU (" + result + ")";
  } else {
    d.problem = "the CUDA driver at " + d.path + which + " cannot be used (" + result + ")";
  }
  return d;
}

const Driver& driver() {
  static const Driver probed = probe_driver();
  return probed;
}

int device_count(std::string* error) {
  // The driver's own verdict names the cause; the runtime's would call a missing driver
  // "insufficient" and a stub only "a stub library", without saying which file.
  if (!driver().problem.empty()) {
    if (error) *error = driver().problem;
    return 0;
  }
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
  int runtime = 0, blas_major = 0, blas_minor = 0, blas_patch = 0;
  cudaRuntimeGetVersion(&runtime);
  cublasGetProperty(MAJOR_VERSION, &blas_major);
  cublasGetProperty(MINOR_VERSION, &blas_minor);
  cublasGetProperty(PATCH_LEVEL, &blas_patch);
  // What the driver is; why it cannot be used is device_count's error, said once.
  const Driver& d = driver();
  std::string driver_text = d.path.empty() ? "none found" : d.stub ? "stub" : "unknown version";
  if (d.version && !d.stub) driver_text = cuda_version_text(d.version);
  if (!d.path.empty()) driver_text += " (" + d.path + ")";
  // NVIDIA's runtime is linked in; the cuda model's is a library of its own.
  const std::string runtime_at = library_of(reinterpret_cast<const void*>(&cudaRuntimeGetVersion));
  const bool linked_in = runtime_at == library_of(reinterpret_cast<const void*>(&versions));
  return "CUDA runtime " + cuda_version_text(runtime) +
         (linked_in ? " (static)" : " (" + runtime_at + ")") + ", driver " + driver_text +
         ", cuBLAS " + std::to_string(blas_major) + "." + std::to_string(blas_minor) + "." +
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
