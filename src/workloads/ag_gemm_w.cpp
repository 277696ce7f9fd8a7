// ag_gemm_w: FSDP/ZeRO-3's weight all-gather before the GEMM, Y_r = X_r * W, stored transposed
// so that the gathered weight's shards are row blocks: Yt[F, M/N] = AllGather(Wt)[F, D] *
// Xt_r[D, M/N].
#include "fob/layer.h"

namespace fob {
namespace {

Geometry weight_gather_geometry(const Shape& shape) {
  Geometry g = transposed_geometry(shape, shape.ffn, "ffn");
  g.x = "WT";
  g.w1 = "XT";
  return g;
}

}  // namespace

extern constinit const WorkloadDef kAgGemmW = one_half_workload(
    "ag_gemm_w", "FSDP/ZeRO-3 weight all-gather + GEMM", weight_gather_geometry, kAllGatherGemm);

}  // namespace fob
