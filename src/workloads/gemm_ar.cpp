// gemm_ar: tensor-parallel GEMM + all-reduce, Z[M, D] = sum_j H_j * W2_j on every rank: the
// reduce-scatter half, then an all-gather of the reduced blocks (an all-reduce decomposed as
// NCCL's ring runs it).
#include "fob/layer.h"

namespace fob {
namespace {

void build_gemm_ar(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  Layer layer(b, spec, g);
  reduce_scatter_half(layer, input_h(layer), Reduction::all);
}

}  // namespace

extern constinit const WorkloadDef kGemmAr = {
    .name = "gemm_ar",
    .summary = "tensor-parallel GEMM + all-reduce",
    .geometry = layer_geometry,
    .build = build_gemm_ar,
    .patterns = kGemmReduceScatter | kAllGatherBlocks,
};

}  // namespace fob
