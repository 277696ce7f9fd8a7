// Every library of the cuda model exports this symbol, so that a build of the cuda module can
// tell the model's libraries from NVIDIA's and refuse the other kind's
// (src/backends/cuda/model_guard.cpp).
extern "C" __attribute__((visibility("default"))) const char fobmodel_identity[] =
    "fobench cuda model (tests/cuda_model)";
