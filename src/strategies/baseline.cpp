// The paper's "vanilla": one blocking collective and one full GEMM; nothing overlaps.
#include "a2a_pieces.h"
#include "fob/strategy.h"
#include "moe_pieces.h"
#include "pattern_set.h"

namespace fob {
namespace {

void all_gather_gemm(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  if (b.world() > 1) b.all_gather(p.x, 0, p.block, p.block, "all-gather X");
  b.gemm({p.x, 0, p.tokens}, {p.w, 0, p.hidden}, {p.y, 0, p.tokens}, false, "Y = X*W1");
}

void gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int /*param*/) {
  if (b.world() == 1) {
    b.gemm({p.h, 0, p.tokens}, {p.w, 0, p.ffn_local}, {p.z, p.z_row, p.block}, false, "Z = H*W2");
    return;
  }
  int partial = b.buffer("p", p.tokens, p.hidden);
  b.gemm({p.h, 0, p.tokens}, {p.w, 0, p.ffn_local}, {partial, 0, p.tokens}, false, "P = H*W2");
  b.reduce_scatter(partial, 0, p.block, {p.z, p.z_row, p.block}, "reduce-scatter P");
}

// The all-reduce's second half as one blocking all-gather.
void all_gather_blocks(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  if (b.world() > 1) b.all_gather(p.x, 0, p.block, p.block, "all-gather Z");
}

// Ulysses as DeepSpeed runs it: the whole projection, then one blocking all-to-all (per
// sequence: rows are batch-major); the second all-to-all, then the whole output projection.
void gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  project_qkv_all(b, p, 0, p.local_rows(), "QKV = X*WQKV");
  all_to_all_qkv(b, p, 0, p.local_rows(), "all-to-all QKV");
}

void all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  all_to_all_o(b, p, 0, p.local_rows(), "all-to-all O");
  for (int j = 0; j < b.world(); ++j) {
    project_out(b, p, j, 0, p.local_rows(), j > 0, "Z += O heads " + std::to_string(j) + " * WO");
  }
}

// The mixture-of-experts layer as frameworks run it: gather, one all-to-all, every expert, one
// all-to-all back, the weighted sum.
void moe_layer(PlanBuilder& b, const MoeProblem& p, int /*param*/) {
  moe_in_chunks(b, p, 1);
}

}  // namespace

extern constinit const Strategy kBaseline = with_patterns(
    {
        .name = "baseline",
        .summary = "one blocking collective, one full GEMM",
        .role = StrategyRole::serial_baseline,
    },
    {all_gather_gemm, gemm_reduce_scatter, gemm_all_to_all, all_to_all_gemm, all_gather_blocks,
     moe_layer});

}  // namespace fob
