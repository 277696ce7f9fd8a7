// How kernels.cu launches its kernels. Under nvcc, FOB_LAUNCH(kernel, grid, block, shmem,
// stream)(args...) is kernel<<<grid, block, shmem, stream>>>(args...). The cuda model
// (tests/cuda_model) compiles the very same kernels.cu with the host compiler, where `<<<>>>`
// does not parse: its force-included fobmodel/device.h defines FOB_LAUNCH to queue the kernel
// on the model's stream, which runs each block's threads as fibers, so the model runs these
// kernels and never a second copy of them.
#pragma once

#if defined(__CUDACC__)
#define FOB_LAUNCH(kernel, grid, block, shmem, stream) kernel<<<grid, block, shmem, stream>>>
#elif !defined(FOB_LAUNCH)
#error "kernels.cu is compiled by nvcc, or for the cuda model with fobmodel/device.h included"
#endif
