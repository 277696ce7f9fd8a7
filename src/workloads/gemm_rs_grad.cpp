// gemm_rs_grad: the data-parallel weight gradient reduce-scattered as it is computed,
// dW[D/N, F] = rows r of sum_j Xt_j[D, M/N] * dY_j[M/N, F] (dW = X^T dY).
#include "fob/layer.h"

namespace fob {
namespace {

Geometry gradient_geometry(const Shape& shape) {
  Geometry g = transposed_geometry(shape, shape.hidden, "hidden");
  g.d = shape.ffn;
  g.h = "XT";
  g.w2 = "DY";
  return g;
}

}  // namespace

extern constinit const WorkloadDef kGemmRsGrad =
    one_half_workload("gemm_rs_grad", "data-parallel weight gradient GEMM + reduce-scatter",
                      gradient_geometry, kGemmReduceScatter);

}  // namespace fob
