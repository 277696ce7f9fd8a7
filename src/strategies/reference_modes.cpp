// Reference modes, run once per shape: compute_only (the same GEMMs, unsliced, no transfers)
// gives T_comp; comm_only (the baseline collectives alone) gives T_comm. Together they bound
// what any overlap can achieve.
#include "fob/strategy.h"

namespace fob {
namespace {

void compute_ag(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  // No all-gather runs, so the whole X is input data rather than garbage.
  b.input({p.x, 0, p.tokens, p.x_tensor, 0, 0});
  b.gemm({p.x, 0, p.tokens}, {p.w, 0, p.hidden}, {p.y, 0, p.tokens}, false, "Y = X*W1");
}

void compute_rs(PlanBuilder& b, const RsProblem& p, int /*param*/) {
  int partial = b.buffer("p", p.tokens, p.hidden);
  b.gemm({p.h, 0, p.tokens}, {p.w, 0, p.ffn_local}, {partial, 0, p.tokens}, false, "P = H*W2");
}

void comm_ag(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  if (b.world() > 1) b.all_gather(p.x, 0, p.block, p.block, "all-gather X");
}

void comm_rs(PlanBuilder& b, const RsProblem& p, int /*param*/) {
  // The partial sums are input data here: global P is [M, N*D], rank j holding columns j*D...
  int partial = b.buffer("p", p.tokens, p.hidden);
  b.input({partial, 0, p.tokens, "P", 0, b.rank() * p.hidden});
  if (b.world() > 1) {
    b.reduce_scatter(partial, 0, p.block, {p.z, p.z_row, p.block}, "reduce-scatter P");
  } else {
    b.copy({p.z, p.z_row, p.block}, {partial, 0, p.block}, "Z = P");
  }
}

void no_transfer(PlanBuilder& /*b*/, const AgProblem& /*p*/, int /*param*/) {}

void comm_ag_blocks(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  if (b.world() > 1) b.all_gather(p.x, 0, p.block, p.block, "all-gather Z");
}

}  // namespace

extern const Strategy kComputeOnly = {
    .name = "compute_only",
    .summary = "reference: GEMMs alone, unsliced",
    .role = StrategyRole::compute_reference,
    .all_gather_gemm = compute_ag,
    .gemm_reduce_scatter = compute_rs,
    .all_gather_blocks = no_transfer,
};
extern const Strategy kCommOnly = {
    .name = "comm_only",
    .summary = "reference: baseline collectives alone",
    .role = StrategyRole::comm_reference,
    .all_gather_gemm = comm_ag,
    .gemm_reduce_scatter = comm_rs,
    .all_gather_blocks = comm_ag_blocks,
};

}  // namespace fob
