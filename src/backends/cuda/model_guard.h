// Which CUDA libraries this build of the module runs on: NVIDIA's, or the cuda model's
// (tests/cuda_model), which a second build of these same sources (FOB_CUDA_MODEL) links to.
#pragma once

#include <string>

namespace fob {

// Why the libraries this process loaded are the other kind's (naming the file), or "". Every
// library of the model exports `fobmodel_identity`: the model module's host-compiled kernels
// cannot run on a GPU, and NVIDIA's module on the model would present the CPU's times as a GPU's.
std::string foreign_cuda_libraries();

// The file a symbol of this process was found in.
std::string library_of(const void* symbol);

}  // namespace fob
