#include "fob/types.h"

#include <array>

namespace fob {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::fp64:
      return "fp64";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
  }
  return "?";
}

DType parse_dtype(const std::string& text) {
  for (DType d : {DType::fp32, DType::fp64, DType::bf16, DType::fp16}) {
    if (text == to_string(d)) return d;
  }
  throw InputError("dtype: '" + text + "' is not a dtype; valid: fp32, fp64, bf16, fp16");
}

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return 4;
    case DType::fp64:
      return 8;
    case DType::bf16:
    case DType::fp16:
      return 2;
  }
  return 0;
}

const char* to_string(Workload workload) {
  switch (workload) {
    case Workload::ag_gemm:
      return "ag_gemm";
    case Workload::gemm_rs:
      return "gemm_rs";
    case Workload::mlp:
      return "mlp";
    case Workload::ag_gemm_w:
      return "ag_gemm_w";
    case Workload::gemm_rs_grad:
      return "gemm_rs_grad";
    case Workload::gemm_ar:
      return "gemm_ar";
    case Workload::mlp_bwd:
      return "mlp_bwd";
    case Workload::attn:
      return "attn";
  }
  return "?";
}

Workload parse_workload(const std::string& text) {
  std::string choices;
  for (Workload w : kAllWorkloads) {
    if (text == to_string(w)) return w;
    choices += (choices.empty() ? "" : ", ") + std::string(to_string(w));
  }
  throw InputError("workload: '" + text + "' is not a workload; valid: " + choices);
}

}  // namespace fob
