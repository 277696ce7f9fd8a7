// Workloads: which buffers exist, which inputs fill them, and how a strategy's halves compose.
#pragma once

#include <string>
#include <vector>

#include "fob/plan.h"
#include "fob/strategy.h"

namespace fob {

struct CaseSpec {
  Workload workload = Workload::mlp;
  Shape shape;
  DType dtype = DType::fp32;
  int world = 1;
  StrategySpec strategy;
  // A check mode: the plans of a `world`-rank case, run by one process whose every transfer
  // goes to itself. The inputs repeat with a period that divides every shard (see
  // loopback_period), so what a rank receives from itself is what its peer would have sent and
  // the output is the `world`-rank output, verified against the usual oracle.
  bool loopback = false;
};

// A workload's GEMMs in the roles the strategies know. M rows are split over the ranks (the
// dimension gathered before, or scattered after, the GEMM); D is the all-gather GEMM's
// contraction and the reduce-scatter GEMM's output width; F is sharded across ranks. The
// weight- and data-parallel layouts are the same two halves over other tensors, stored
// transposed where that makes them row blocks:
//   ag_gemm_w     Yt[F, M/N] = AllGather(Wt)[F, D] * Xt_r[D, M/N]   (Y_r = X_r * W)
//   gemm_rs_grad  dW[D/N, F] = rows r of sum_j Xt_j[D, M/N] * dY_j[M/N, F]   (dW = X^T dY)
//   gemm_ar       Z[M, D] = sum_j H_j * W2_j: the reduce-scatter half, then an all-gather of
//                 the reduced blocks (an all-reduce decomposed as NCCL's ring runs it)
//   mlp_bwd       dY = AllGather(dZ) * W2^T, dW2 = Y^T * dZ, X gathered again while
//                 dX = ReduceScatter(dY * W1^T) computes, then dW1 = X^T * dY: Megatron's order
//   attn          QKV_r = AllGather(X) * WQKV_r [M, 3D/N] (this rank's heads: Q | K | V),
//                 O_r = softmax(Q K^T / sqrt(dh)) V per sequence and head [M, D/N],
//                 Z = ReduceScatter(O_r * WO_r): Megatron's TPSP attention block
//   ulysses       QKV = X_r * WQKV for every rank's heads, all-to-all to this rank's heads over
//                 every token, O_r as attn's, all-to-all back to this rank's tokens,
//                 Z_r = sum_j O_(tokens r, heads j) * WO_j: DeepSpeed-Ulysses (no has_ag/has_rs;
//                 strategy.h's A2aProblem)
struct Geometry {
  int64_t m = 0, d = 0, f = 0;
  int64_t ag_f = 0;  // the all-gather GEMM's output width over all ranks (attn: 3D; else f)
  const char* m_key = "batch*seq";  // the config keys behind m and f, for messages
  const char* f_key = "ffn";
  const char* x = "X";    // the all-gathered input [m, d]
  const char* w1 = "W1";  // the all-gather GEMM's weight [d, f], rank r holding columns r
  const char* h = "H";    // the reduce-scatter GEMM's input [m, f], rank r holding columns r
  const char* w2 = "W2";  // its weight [f, d], rank r holding rows r
  bool has_ag = false, has_rs = false;
  bool h_is_y = false;      // mlp: the second GEMM consumes the first one's output
  bool all_reduce = false;  // gemm_ar: every rank ends with every reduced block
  bool backward = false;    // mlp_bwd: weight gradients and a second gather of X as well
  bool attention = false;   // attn: H is the attention of the all-gather GEMM's Q, K and V
  bool all_to_all = false;  // ulysses: m is split by tokens of every sequence, heads exchanged
  int64_t seq = 0, heads = 0, head_dim = 0;
};
Geometry geometry(Workload workload, const Shape& shape);
// Whether the workload a results file names has attention heads (false for a name this
// version does not know).
bool has_attention(const std::string& workload);

// Throws InputError when the shape does not divide by the world size or the strategy's
// parameter, naming the key, the value and what would be valid.
void validate_case(const CaseSpec& spec);

Plan make_plan(const CaseSpec& spec, int rank);
// The smallest p with which rank r + p's plan is rank r's with every peer moved by p (sim.h's
// is_rotation_of), as the geometry makes it: 1 but for attention, whose query tiling sees
// where sequences cross the ranks' blocks. At most world.
int plan_rotation_period(const CaseSpec& spec);
// Every rank's plan of the case, rank by rank: what the simulator prices.
std::vector<Plan> make_plans(const CaseSpec& spec);

// The period with which a loopback case's inputs repeat: the greatest common divisor of every
// extent a rank's shard or block spans (and of the sequence length for attention, so that all
// sequences are equal too). Throws InputError when it is 1 (every input would be one value).
int64_t loopback_period(const CaseSpec& spec);

// The tasks computing rows [row, row + rows) of this rank's attention output `o` from `qkv`,
// sequence by sequence, all local heads in one batched GEMM: scores = Q K^T, softmax, O = P V;
// a tile of query rows at a time where a whole sequence's scores would pass kScoresElements.
inline constexpr int64_t kScoresElements = int64_t{1} << 28;
void attention_rows(PlanBuilder& b, const Geometry& g, int qkv, int o, int64_t row, int64_t rows);

}  // namespace fob
