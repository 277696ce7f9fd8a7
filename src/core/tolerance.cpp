#include "fob/tolerance.h"

#include <cmath>

#include "fob/workload.h"

namespace fob {

double verify_tolerance(DType dtype, int world) {
  switch (dtype) {
    case DType::bf16:
      return (world + 2) * std::ldexp(1.0, -8);
    case DType::fp16:
      return (world + 2) * std::ldexp(1.0, -11);
    default:
      return 0.0;
  }
}

double attention_tolerance(DType dtype, int world, int64_t seq, int64_t hidden) {
  const double u_acc = std::ldexp(1.0, dtype == DType::fp64 ? -53 : -24);
  const double u_store = dtype == DType::bf16   ? std::ldexp(1.0, -8)
                         : dtype == DType::fp16 ? std::ldexp(1.0, -11)
                                                : 0.0;
  return 16 * std::sqrt(static_cast<double>(seq + hidden)) * u_acc + (world + 6) * u_store;
}

double streamed_attention_tolerance(DType dtype, int64_t blocks) {
  const double u_acc = std::ldexp(1.0, dtype == DType::fp64 ? -53 : -24);
  const double u_store = dtype == DType::bf16   ? std::ldexp(1.0, -8)
                         : dtype == DType::fp16 ? std::ldexp(1.0, -11)
                                                : 0.0;
  return 6 * static_cast<double>(blocks) * (u_acc + u_store);
}

double fast_math_tolerance(DType dtype) {
  switch (dtype) {
    case DType::fp32:
    case DType::fp16:
      return 4 * std::ldexp(1.0, -11);
    case DType::bf16:
      return 4 * std::ldexp(1.0, -8);
    default:
      return 0.0;
  }
}

Tolerance check_tolerance(const Plan& plan, CheckKind kind, bool fast_math) {
  Tolerance t = plan.workload && plan.workload->tolerance
                    ? plan.workload->tolerance(plan, kind)
                    : Tolerance{verify_tolerance(plan.dtype, plan.world), false};
  if (fast_math) t.bound += fast_math_tolerance(plan.dtype);
  return t;
}

}  // namespace fob
