// Reference modes, run once per shape: compute_only (the same GEMMs, unsliced, no transfers)
// gives T_comp; comm_only (the baseline collectives alone) gives T_comm. Together they bound
// what any overlap can achieve.
#include <string>

#include "a2a_pieces.h"
#include "fob/strategy.h"
#include "moe_pieces.h"
#include "pattern_set.h"

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

// Ulysses: the projections unsliced (the all-to-all buffers hold input data instead).
void compute_a2a_in(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  project_qkv_all(b, p, 0, p.local_rows(), "QKV = X*WQKV");
}

void compute_a2a_out(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  for (int j = 0; j < b.world(); ++j) {
    project_out(b, p, j, 0, p.local_rows(), j > 0, "Z += O heads " + std::to_string(j) + " * WO");
  }
}

void comm_a2a_in(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  all_to_all_qkv(b, p, 0, p.local_rows(), "all-to-all QKV");
}

void comm_a2a_out(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  all_to_all_o(b, p, 0, p.local_rows(), "all-to-all O");
}

// The mixture-of-experts layer, laid out as baseline's: compute_only gathers, runs every expert
// and sums, over received rows and returned results that are input data ("XE", "YC"); comm_only
// runs the two all-to-alls alone, of input data ("XS", "YE").
void moe_inputs(PlanBuilder& b, const MoeProblem& p, int buffer, int64_t rows, const char* tensor) {
  if (rows > 0) b.input({buffer, 0, rows, tensor, moe_input_row(*p.routing, b.rank(), 0), 0});
}

void compute_moe(PlanBuilder& b, const MoeProblem& p, int /*param*/) {
  const MoeLayout layout = moe_layout(*p.routing, b.rank(), 1);
  const MoeBuffers m = moe_buffers(b, p, layout);
  moe_inputs(b, p, m.xe, layout.recv_total(), "XE");
  moe_inputs(b, p, m.yc, layout.send_total(), "YC");
  gather_tokens(b, p, layout, m, 0, layout.send_total(), "gather tokens");
  for (int64_t l = 0; l < layout.local_experts; ++l) {
    const int64_t row = layout.recv_offset(l, 0, 0);
    expert_mlp(b, p, m, l, {m.xe, row, row, m.ye, row, layout.expert_rows(l)},
               "expert " + std::to_string(l));
  }
  combine_sum(b, p, layout, m, 0, layout.tokens_per_rank, "combine sum");
}

void comm_moe(PlanBuilder& b, const MoeProblem& p, int /*param*/) {
  const MoeLayout layout = moe_layout(*p.routing, b.rank(), 1);
  const MoeBuffers m = moe_buffers(b, p, layout);
  moe_inputs(b, p, m.xs, layout.send_total(), "XS");
  moe_inputs(b, p, m.ye, layout.recv_total(), "YE");
  dispatch_all_to_all(b, layout, m, 0, "dispatch");
  combine_all_to_all(b, layout, m, 0, "combine");
}

// nccl-tests' sizes: S is the full gathered (or pre-reduce) buffer. In a ring all-gather or
// reduce-scatter each rank sends (N-1)/N of S, hence S = sent * N / (N-1), and
// busbw = algbw * (N-1)/N. An all-to-all (nccl-tests' alltoall) keeps 1/N of S and sends the
// rest, which gives the same two formulas.
double ring_bytes(double sent_per_rank, int world) {
  const double n = world;
  return sent_per_rank * n / (n - 1);
}

double ring_factor(int world) {
  const double n = world;
  return (n - 1) / n;
}

}  // namespace

extern constinit const Strategy kComputeOnly = with_patterns(
    {
        .name = "compute_only",
        .summary = "reference: GEMMs alone, unsliced",
        .role = StrategyRole::compute_reference,
    },
    {compute_ag, compute_rs, compute_a2a_in, compute_a2a_out, no_transfer, compute_moe});
extern constinit const Strategy kCommOnly = with_patterns(
    {
        .name = "comm_only",
        .summary = "reference: baseline collectives alone",
        .role = StrategyRole::comm_reference,
        .collective_bytes = ring_bytes,
        .busbw_factor = ring_factor,
    },
    {comm_ag, comm_rs, comm_a2a_in, comm_a2a_out, comm_ag_blocks, comm_moe});

}  // namespace fob
