#include "blas_runtime.h"

#include <cblas.h>
#include <dlfcn.h>

namespace fob {
namespace {

using SetThreads = void (*)(int);
using GetConfig = char* (*)();
using GetThreads = int (*)();

// The library that defines cblas_sgemm: the one every GEMM of the cpu backend goes to.
std::string sgemm_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) == 0 || !info.dli_fname) {
    return "unknown library";
  }
  return info.dli_fname;
}

}  // namespace

bool blas_set_threads(int threads) {
  auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!set) return false;
  set(threads);
  return true;
}

int blas_threads_applied(int threads) {
  auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!blas_set_threads(threads) || !get) return 1;
  return get();
}

std::string blas_description() {
  auto config = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  // OpenBLAS's configuration text starts with its name and version.
  if (config) return std::string(config()) + " (cblas from " + sgemm_library() + ")";
  return "reference BLAS, one thread (cblas from " + sgemm_library() + ")";
}

}  // namespace fob
