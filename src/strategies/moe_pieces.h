// The pieces the strategies build the mixture-of-experts layer from (strategy.h's MoeProblem),
// over one rank's layout (moe.h's MoeLayout): the tokens gathered into dispatch order, the
// dispatch and combine as uneven all-to-alls or point-to-point exchanges, an expert's MLP over
// a run of its rows, and the weighted sum back into token order.
#pragma once

#include <cstdint>
#include <string>

#include "fob/strategy.h"

namespace fob {

// The layer's working buffers for one layout: dispatch order (xs: the tokens sent, yc: the
// results that come back), and an expert-side order (xe received, ue the up projection, ae the
// activation, ye the expert outputs). Every buffer has at least one row.
struct MoeBuffers {
  int xs = -1, yc = -1, xe = -1, ue = -1, ae = -1, ye = -1;
};
MoeBuffers moe_buffers(PlanBuilder& b, const MoeProblem& p, const MoeLayout& layout);

// Rows [row, row + rows) of xs take their tokens from x (MoeLayout::send_token).
void gather_tokens(PlanBuilder& b, const MoeProblem& p, const MoeLayout& layout,
                   const MoeBuffers& m, int64_t row, int64_t rows, const std::string& label);

// Local expert l's MLP over `rows` rows: input rows from `in_row` of buffer `in`, the up
// projection and activation at `mid_row` of ue and ae, the output at `out_row` of `out`. Nothing
// for no rows.
struct ExpertRows {
  int in = -1;
  int64_t in_row = 0;
  int64_t mid_row = 0;
  int out = -1;
  int64_t out_row = 0;
  int64_t rows = 0;
};
void expert_mlp(PlanBuilder& b, const MoeProblem& p, const MoeBuffers& m, int64_t local_expert,
                const ExpertRows& rows, const std::string& label);

// Chunk c's dispatch (xs to xe) and combine (ye back to yc) as uneven all-to-alls, in the
// layout's expert order.
int dispatch_all_to_all(PlanBuilder& b, const MoeLayout& layout, const MoeBuffers& m, int64_t c,
                        const std::string& label);
int combine_all_to_all(PlanBuilder& b, const MoeLayout& layout, const MoeBuffers& m, int64_t c,
                       const std::string& label);

// y's local tokens [first, first + count) become the weighted sum of their choices' results
// in yc: one gather per choice, the first setting the rows (a token whose every choice was
// dropped is zero), the others adding.
void combine_sum(PlanBuilder& b, const MoeProblem& p, const MoeLayout& layout, const MoeBuffers& m,
                 int64_t first, int64_t count, const std::string& label);

// The layer in `chunks` token chunks over uneven all-to-alls (baseline: one chunk; slicing:C):
// every chunk's tokens gathered first, then chunk c's dispatch runs while chunk c-1's experts
// compute, and chunk c's combine while chunk c+1's do; chunk c's weighted sum waits behind
// chunk c+1's experts, so that the compute stream never stands behind a transfer it could
// have overlapped.
void moe_in_chunks(PlanBuilder& b, const MoeProblem& p, int chunks);

}  // namespace fob
