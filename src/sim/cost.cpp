#include <cmath>

#include "fob/sim.h"

namespace fob {

UniformCost::UniformCost(double flops_per_second, double mem_bytes_per_second,
                         double latency_seconds, double bytes_per_second,
                         double slowdown_while_transferring)
    : flops_per_second_(flops_per_second),
      mem_bytes_per_second_(mem_bytes_per_second),
      latency_(latency_seconds),
      bytes_per_second_(bytes_per_second),
      slowdown_(slowdown_while_transferring) {}

double UniformCost::compute_seconds(const Task& t, DType dtype, int /*rank*/) const {
  if (t.kind == TaskKind::gemm) return t.flops / flops_per_second_;
  // Element-wise tasks are memory bound (plan.h's memory_elements).
  const double bytes = memory_elements(t) * dtype_bytes(dtype);
  if (std::isinf(mem_bytes_per_second_)) return 0.0;
  return bytes / mem_bytes_per_second_;
}

double UniformCost::transfer_seconds(int64_t bytes, int /*from_rank*/, int /*to_rank*/) const {
  return latency_ + static_cast<double>(bytes) / bytes_per_second_;
}

}  // namespace fob
