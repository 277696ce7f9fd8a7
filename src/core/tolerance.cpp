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

bool verify_attention(const Plan& plan, CheckKind kind) {
  // What the attention's softmax feeds; ulysses' compute_only feeds its output projection
  // integer input instead (input_out), so that check stays exact.
  return geometry(plan.workload, plan.shape).attention &&
         (kind == CheckKind::attn_out || kind == CheckKind::rs_out ||
          kind == CheckKind::local_product || kind == CheckKind::ulysses_out ||
          kind == CheckKind::input_attn_out);
}

double verify_tolerance(const Plan& plan, CheckKind kind) {
  return verify_attention(plan, kind)
             ? attention_tolerance(plan.dtype, plan.world, plan.shape.seq, plan.shape.hidden)
             : verify_tolerance(plan.dtype, plan.world);
}

}  // namespace fob
