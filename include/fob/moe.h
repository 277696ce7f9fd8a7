// The mixture-of-experts router (workload `moe`) and the row layouts its all-to-alls move: pure
// functions of the resolved shape, with no plan in them. Every rank routes all M tokens from the
// seed alone, so all ranks agree on who sends what to whom without exchanging counts. The method
// is in docs/method.md#the-moe-router.
//
// Rank r holds tokens [r*T, (r+1)*T), T = M/N. Expert e lives on rank e % N as that rank's local
// expert e / N, so rank r's local experts are r, r+N, r+2N, ... below E.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fob/types.h"

namespace fob {

// The resolved router settings (MoeShape's zeros already replaced by their defaults).
struct MoeRouter {
  int64_t tokens = 0;  // M, all ranks' tokens together (batch * seq)
  int64_t world = 1;   // N
  int64_t experts = 0;
  int64_t top_k = 0;
  double skew = 0;             // Zipf exponent of expert popularity; 0: uniform
  double capacity_factor = 0;  // > 0: each expert takes at most a capacity from each rank
  uint64_t seed = 0;
  bool operator==(const MoeRouter&) const = default;
};

// A shape's router on `world` ranks: its MoE keys resolved (Shape::experts() and the rest).
MoeRouter moe_router(const Shape& shape, int64_t world);

// The largest routing weight; weights are the integers 1..kMoeMaxWeight.
inline constexpr int kMoeMaxWeight = 3;

// Where every token's top_k choices went. Choice q of global token t is entry t * top_k + q.
struct MoeRouting {
  int64_t tokens = 0, world = 1, experts = 0, top_k = 0;
  int64_t capacity = 0;  // the per-(rank, expert) cap; 0: none
  // The expert of each choice, -1 where the capacity dropped it. A token's experts are
  // distinct and its first choice is the one drawn first (the most probable on average).
  std::vector<int64_t> expert;
  // Each choice's routing weight in 1..kMoeMaxWeight, also for a dropped choice (which does not
  // pass its weight on to the token's other choices).
  std::vector<int> weight;
  std::vector<int64_t> dropped;  // [rank]: choices of the rank's tokens the capacity dropped
  std::vector<int64_t> kept;     // [rank * experts + e]: choices of the rank's tokens e takes
  // [e]: the chance that a draw from all experts picks e, p(e) as the router quantised it.
  std::vector<double> popularity;
  // The expert the seeded popularity order puts first (largest share when skew > 0).
  int64_t hot_expert = 0;
  // The kept choices by expert, each expert's in token order: expert e's are
  // by_expert[by_expert_first[e] .. by_expert_first[e + 1]). A rank's layout reads its own
  // experts' choices, not every token's (a world's layouts together read each choice once).
  std::vector<int64_t> by_expert, by_expert_first;

  int64_t tokens_per_rank() const { return tokens / world; }
  int64_t choice(int64_t token, int64_t q) const { return token * top_k + q; }
};

// The routing of every token. InputError (naming the key) when the settings cannot route:
// experts outside [1, 2^20], top_k outside [1, experts], skew or capacity_factor negative or not
// finite, tokens not a positive multiple of world.
MoeRouting route_tokens(const MoeRouter& router);
// route_tokens(router), computed once for the last few routers asked for (thread-safe): every
// rank's plan of a case routes the same tokens, and the simulator builds every rank's plan of
// each case, so routing per plan made a world of N ranks route N times (most of `sim`'s time
// at N = 256).
std::shared_ptr<const MoeRouting> shared_routing(const MoeRouter& router);

// The experts living on `rank`: ceil((E - rank) / N), 0 for a rank at or past E.
int64_t moe_local_experts(int64_t experts, int64_t world, int64_t rank);

// Chunk c of a rank's T tokens is its local tokens [moe_chunk_begin(T, C, c),
// moe_chunk_begin(T, C, c + 1)): floor division, so chunks differ by at most one token.
int64_t moe_chunk_begin(int64_t tokens_per_rank, int64_t chunks, int64_t chunk);

// A run of consecutive rows of a buffer, as an all-to-all-v span.
struct MoeSpan {
  int64_t row = 0;
  int64_t rows = 0;
  bool operator==(const MoeSpan&) const = default;
};

// One rank's buffers for a chunk count C.
//
// Send side ("dispatch order"): one row per kept (token, choice) of the rank, ordered by chunk
// c, destination rank j, j's local expert l, then token. Combine's results come back into the
// same rows, so one layout serves the dispatch's send buffer and the combine's receive buffer.
//
// Expert side ("expert order"): the rows the rank's experts take, ordered by local expert l,
// chunk c, source rank i, then token; so each local expert's rows are contiguous (one GEMM per
// expert) and within them source i's rows of chunk c are. The block (l, c, i) holds exactly rank
// i's send-side block (c, r, l), in the same order.
struct MoeLayout {
  int64_t rank = 0, world = 1, experts = 0, top_k = 0, chunks = 1;
  int64_t tokens_per_rank = 0;
  int64_t local_experts = 0;  // this rank's experts

  // Send side, per row: the local token (0..T-1) and the choice index (0..top_k-1).
  std::vector<int64_t> send_token;
  std::vector<int> send_choice;
  // Expert side, per row: the source rank, its local token and the choice index.
  std::vector<int64_t> recv_source;
  std::vector<int64_t> recv_token;
  std::vector<int> recv_choice;

  // The combine's weighted sum, per choice q: entry q * T + t is the send-side row holding
  // local token t's q-th choice's result, -1 where the capacity dropped it, and its weight
  // (0 where dropped).
  std::vector<int64_t> combine_row;
  std::vector<int> combine_weight;

  // Row counts and first rows of each block.
  int64_t send_rows(int64_t chunk, int64_t dest, int64_t local_expert) const;
  int64_t send_offset(int64_t chunk, int64_t dest, int64_t local_expert) const;
  int64_t recv_rows(int64_t local_expert, int64_t chunk, int64_t source) const;
  int64_t recv_offset(int64_t local_expert, int64_t chunk, int64_t source) const;
  // The rows of a local expert on the expert side: its GEMM's M, starting at
  // recv_offset(l, 0, 0).
  int64_t expert_rows(int64_t local_expert) const;
  int64_t send_total() const { return static_cast<int64_t>(send_token.size()); }
  int64_t recv_total() const { return static_cast<int64_t>(recv_token.size()); }

  // For chunk c, what this rank sends to `dest` (its send-side blocks (c, dest, l) in l order)
  // and what it receives from `source` (its expert-side blocks (l, c, source) in l order), empty
  // blocks skipped. The n-th span rank r sends j carries the rows of the n-th span j receives
  // from r; the combine sends the receive spans back and lands them in the send spans.
  std::vector<MoeSpan> send_spans(int64_t chunk, int64_t dest) const;
  std::vector<MoeSpan> recv_spans(int64_t chunk, int64_t source) const;

  // The send side's blocks in (c, j, l) order, flat: index c * E + slot, where rank j's local
  // expert l has slot slot_first[j] + l. The expert side's blocks: index (l * C + c) * N + i.
  // The *_first tables are the prefix sums, one entry longer.
  std::vector<int64_t> send_count, send_first, recv_count, recv_first;
  std::vector<int64_t> slot_first;  // [j], N + 1 entries
};

// Where row `row` of rank `rank`'s exchanged buffers lies in the global input tensors that the
// reference modes fill them with in place of what the layer would have computed (compute_only:
// "XE" received, "YC" combined; comm_only: "XS" sent, "YE" expert outputs): no rank holds more
// than tokens * top_k rows, so the ranks' rows never meet.
inline int64_t moe_input_row(const MoeRouting& routing, int64_t rank, int64_t row) {
  return rank * routing.tokens * routing.top_k + row;
}

// Rank `rank`'s layout for `chunks` chunks. std::logic_error when chunks is not in
// [1, tokens_per_rank] or rank not in [0, world): the plan chooses both.
MoeLayout moe_layout(const MoeRouting& routing, int64_t rank, int64_t chunks);

}  // namespace fob
