// mlp_bwd: the TPSP MLP's backward pass in Megatron's order. dY = AllGather(dZ) * W2^T,
// dW2 = Y^T * dZ, X gathered again while dX = ReduceScatter(dY * W1^T) computes, then
// dW1 = X^T * dY.
#include "fob/layer.h"

namespace fob {
namespace {

Geometry backward_geometry(const Shape& shape) {
  Geometry g = layer_geometry(shape);
  g.h_source = Geometry::HSource::product;
  g.x = "DZ";
  g.w1 = "W2T";
  g.w2 = "W1T";
  return g;
}

void build_mlp_bwd(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  Layer layer(b, spec, g);
  // dW2 reads the gathered dZ in token order.
  const int dy = all_gather_half(layer, /*x_reused=*/true);
  const int forward_x = backward_start(layer);
  reduce_scatter_half(layer, HInput{dy, nullptr}, Reduction::scatter);
  weight_gradient_w1(layer, forward_x, dy);
}

}  // namespace

extern constinit const WorkloadDef kMlpBwd = {
    .name = "mlp_bwd",
    .summary = "TPSP MLP backward: data and weight gradients",
    .geometry = backward_geometry,
    .build = build_mlp_bwd,
    .patterns = kAllGatherGemm | kGemmReduceScatter | kAllGatherBlocks,
};

}  // namespace fob
