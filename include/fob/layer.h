// The building blocks the built-in workloads compose their plans of (src/workloads/): the
// tensor-parallel halves around a strategy's collective patterns, attention, the backward
// pass's extra GEMMs, and the checks shared by the attention layouts. A workload defined
// outside fobench may use them too.
#pragma once

#include <functional>

#include "fob/workload.h"

namespace fob {

// One rank's view of the layer while its plan is built.
struct Layer {
  const CaseSpec& spec;
  PlanBuilder& b;
  const Geometry& g;
  int64_t rank, m, d, f_local, ag_f_local, block;
  const Strategy& strategy;
  bool compute_only, comm_only;

  Layer(PlanBuilder& builder, const CaseSpec& s, const Geometry& geometry);
  int param() const { return spec.strategy.param; }
};

// All-gather, then GEMM: Y = AllGather(X) * W1, checked. Returns Y's buffer. `x_reused`: a
// later task reads the gathered X in token order, so the strategy must keep its rows so.
int all_gather_half(Layer& l, bool x_reused = false);

// The weight-side layouts (ag_gemm_w, gemm_rs_grad) hold the layer transposed: the tokens are
// the f extent (the other ranks' tokens, which both sum or gather over), and `m`, keyed `m_key`,
// the rows the collective moves.
Geometry transposed_geometry(const Shape& shape, int64_t m, const char* m_key);

// The plans of the layouts that are one half alone (ag_gemm, ag_gemm_w; gemm_rs, gemm_rs_grad),
// ready for WorkloadDef::build.
void build_all_gather_gemm(PlanBuilder& b, const CaseSpec& spec, const Geometry& g);
void build_gemm_reduce_scatter(PlanBuilder& b, const CaseSpec& spec, const Geometry& g);
// Their table entries: `half` (kAllGatherGemm or kGemmReduceScatter) picks both the build and
// the one pattern it asks strategies for, so that the two cannot disagree.
constexpr WorkloadDef one_half_workload(const char* name, const char* summary,
                                        Geometry (*geometry)(const Shape& shape), Pattern half,
                                        const char* part_of = nullptr) {
  return {
      .name = name,
      .summary = summary,
      .geometry = geometry,
      .build = half == kAllGatherGemm ? build_all_gather_gemm : build_gemm_reduce_scatter,
      .patterns = half,
      .part_of = part_of,
  };
}

// The reduce-scatter GEMM's input H: a buffer, and, when its rows are computed (attention's
// O), what computes rows [row, row + rows) for a query-split strategy to interleave.
struct HInput {
  int buffer = -1;
  std::function<void(PlanBuilder& builder, int64_t row, int64_t rows)> produce;
};
// H as the input tensor g.h, this rank's columns.
HInput input_h(Layer& l);
// H as the attention output O of the Q, K and V in `qkv` (all_gather_half's Y): computed whole
// here, or left to a query-split strategy, and checked.
HInput attention_h(Layer& l, int qkv);

// GEMM, then reduce-scatter (Reduction::scatter) or all-reduce as reduce-scatter and
// all-gather of the reduced blocks (Reduction::all): Z = H * W2, checked. Returns Z's buffer.
enum class Reduction : uint8_t { scatter, all };
int reduce_scatter_half(Layer& l, const HInput& h, Reduction reduction);

// The backward pass's start: dW2 = Y^T * dZ, and the forward input X gathered again for dW1
// while dX computes. Returns the gathered X's buffer.
int backward_start(Layer& l);
// dW1 = X^T * dY after the reduce-scatter half: `forward_x` from backward_start, `dy` the
// all-gather GEMM's output.
void weight_gradient_w1(Layer& l, int forward_x, int dy);

// The tasks computing rows [row, row + rows) of this rank's attention output `o` from `qkv`,
// sequence by sequence, all local heads in one batched GEMM: scores = Q K^T, softmax, O = P V;
// a tile of query rows at a time where a whole sequence's scores would pass kScoresElements.
inline constexpr int64_t kScoresElements = int64_t{1} << 28;
void attention_rows(PlanBuilder& b, const Geometry& g, int qkv, int o, int64_t row, int64_t rows);

// The streamed attention (online softmax: TaskKind::online_softmax): the tasks folding the keys
// and values of `qkv`'s rows [key_row, key_row + key_rows) into the running attention of its
// query rows [row, row + rows) (one sequence), held in `o` (unnormalised) and the buffer
// "attn_state" (each query row's running maximum and sum per local head); `first`: those
// queries' first keys. attention_finish normalises rows of `o` once every key is in.
void attention_block(PlanBuilder& b, const Geometry& g, int qkv, int o, int64_t row, int64_t rows,
                     int64_t key_row, int64_t key_rows, bool first);
void attention_finish(PlanBuilder& b, const Geometry& g, int o, int64_t row, int64_t rows);

// The attention layouts' geometry: Q, K and V of every head from WQKV [D, 3D], O [M, D], WO.
Geometry attention_geometry(const Shape& shape);
// Their heads: given or the default, dividing hidden and the world; and their scores, which
// must stay addressable.
void validate_heads(const CaseSpec& spec, const Geometry& g);
// Checks whose values pass through the softmax get tolerance.h's attention_tolerance.
Tolerance attention_check_tolerance(const Plan& plan, CheckKind kind);

}  // namespace fob
