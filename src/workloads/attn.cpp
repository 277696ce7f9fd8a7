// attn: Megatron's TPSP attention block. QKV_r = AllGather(X) * WQKV_r [M, 3D/N] (this rank's
// heads: Q | K | V), O_r = softmax(Q K^T / sqrt(dh)) V per sequence and head [M, D/N],
// Z = ReduceScatter(O_r * WO_r).
#include <numeric>

#include "fob/layer.h"

namespace fob {
namespace {

void build_attn(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  Layer layer(b, spec, g);
  const int qkv = all_gather_half(layer);
  reduce_scatter_half(layer, attention_h(layer, qkv), Reduction::scatter);
}

// Attention's tiling by sequence sees where a rank's rows fall: a query split computes the
// rows of each destination's block sequence by sequence, and block r starts r * m / N rows in,
// which repeats modulo the sequence every seq / gcd(m / N, seq) ranks (a bound:
// test_sim_rotation.cpp checks it).
int attention_rotation(const CaseSpec& spec, const Geometry& g) {
  if (g.seq < 1) return 1;
  const int64_t block = g.m / spec.world;
  // A block inside one sequence, or of whole sequences, is tiled alike wherever it starts.
  if (block < 1 || block % g.seq == 0 || g.seq % block == 0) return 1;
  const int64_t period = g.seq / std::gcd(block, g.seq);
  return period >= spec.world ? spec.world : static_cast<int>(period);
}

// Every sequence's inputs repeat alike, so that a loopback rank's sequences are all equal.
int64_t whole_sequence(const Geometry& g, int /*world*/) {
  return g.seq;
}

}  // namespace

extern constinit const WorkloadDef kAttn = {
    .name = "attn",
    .summary = "TPSP attention block: QKV, attention, output projection",
    .geometry = attention_geometry,
    .build = build_attn,
    .patterns = kAllGatherGemm | kGemmReduceScatter,
    .computed_h = true,
    .has_heads = true,
    .validate = validate_heads,
    .loopback_extent = whole_sequence,
    .rotation_period = attention_rotation,
    .tolerance = attention_check_tolerance,
    .small_shape = Shape{2, 24, 48, 48, 4},
};

}  // namespace fob
