// A mixture-of-experts case's load (docs/moe-load.md): how the router spread the
// tokens over the experts and ranks, and the bytes each rank's all-to-alls brought it. All ranks
// route from the seed alone, so this is a pure function of the case; the results file records
// it so that a report can name a rank whose experts took the most tokens without routing again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/case_key.h"
#include "fob/plan.h"

namespace fob {

struct MoeLoad {
  // [world]: the bytes each rank receives from the other ranks in the dispatch (tokens in, to its
  // experts) and in the combine (its tokens' results back), over all chunks; its own rows, which
  // no link carries, are not counted.
  std::vector<int64_t> dispatch_bytes, combine_bytes;
  std::vector<int64_t> expert_tokens;  // [experts]: the choices each expert takes (after drops)
  std::vector<int64_t> rank_tokens;    // [world]: its local experts' expert_tokens summed
  std::vector<int64_t> dropped;        // [world]: choices of the rank's tokens the capacity dropped
  // [world][world]: entry i * world + j, the choices of rank i's tokens that rank j's experts take.
  std::vector<int64_t> token_matrix;

  bool empty() const { return expert_tokens.empty(); }
  int64_t world() const { return static_cast<int64_t>(rank_tokens.size()); }
  bool operator==(const MoeLoad&) const = default;
};

// The buffers an MoE plan's dispatch receives into and its combine receives into (moe_pieces.h):
// a transfer's received bytes count as the dispatch's or the combine's by where they land.
inline constexpr const char* kMoeDispatchBuffer = "xe";
inline constexpr const char* kMoeCombineBuffer = "yc";

// The load of a case from its plans, one per rank in rank order; empty unless the workload has
// experts and every rank's plan is given (a simulated ring's one period is not).
MoeLoad moe_load(const std::vector<const Plan*>& plans);

// Why a load read from a file cannot be the router's for a case of `world` ranks, `experts`
// experts, `tokens` tokens and top_k `top_k`: a size that does not match, a value negative or
// past what the tokens allow, or counts that do not add up (a rank's choices kept or dropped
// must be all of its tokens' choices; a rank's tokens are its experts'). Empty when it holds.
std::string moe_load_problem(const MoeLoad& load, int64_t world, int64_t experts, int64_t tokens,
                             int64_t top_k);
// The same for the load a case `key` records (empty or not): a case without experts holds none.
std::string moe_load_problem(const MoeLoad& load, const CaseKey& key);

}  // namespace fob
