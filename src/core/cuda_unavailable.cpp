// The cuda backend's entry points in a build without it (FOB_CUDA=OFF or no toolkit found).
#ifndef FOB_HAVE_CUDA

#include "fob/backend.h"

namespace fob {

bool cuda_backend_built() {
  return false;
}
int cuda_device_count() {
  return 0;
}

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions&) {
  throw InputError(
      "backend: 'cuda' is not built into this fobench (configure with -DFOB_CUDA=ON where the "
      "CUDA toolkit, cuBLAS and NCCL are installed); valid: auto, cpu");
}

std::string cuda_versions() {
  return "cuda backend: not built";
}

}  // namespace fob

#endif
