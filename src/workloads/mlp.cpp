// mlp: the TPSP MLP, Z = ReduceScatter(AllGather(X) * W1 * W2): the second GEMM consumes the
// first one's output.
#include "fob/layer.h"

namespace fob {
namespace {

Geometry mlp_geometry(const Shape& shape) {
  Geometry g = layer_geometry(shape);
  g.h_source = Geometry::HSource::product;
  return g;
}

void build_mlp(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  Layer layer(b, spec, g);
  const int y = all_gather_half(layer);
  reduce_scatter_half(layer, HInput{y, nullptr}, Reduction::scatter);
}

}  // namespace

extern constinit const WorkloadDef kMlp = {
    .name = "mlp",
    .summary = "TPSP MLP: all-gather + GEMM, GEMM + reduce-scatter",
    .geometry = mlp_geometry,
    .build = build_mlp,
    .patterns = kAllGatherGemm | kGemmReduceScatter,
};

}  // namespace fob
