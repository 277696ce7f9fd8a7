// Flash-Overlap's two halves, shared by flash and its query-split form flash_qs.
#pragma once

#include "fob/strategy.h"
#include "pattern_set.h"

namespace fob {

void flash_all_gather_gemm(PlanBuilder& b, const AgProblem& p, int m);
void flash_gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int m);
// Flash-All-to-All, Ulysses' two halves (flash_direct runs the same schedule).
void flash_gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int m);
void flash_all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int m);
// The mixture-of-experts layer's dispatch and combine as rank-adaptive exchanges
// (flash_moe.cpp).
void flash_moe_layer(PlanBuilder& b, const MoeProblem& p, int m);

// flash's table entry, and flash_qs's: the same halves, parameter and tuning, which the latter
// runs with its queries split.
constexpr Strategy flash_entry(const char* name, const char* summary, bool query_split) {
  return with_patterns(
      {
          .name = name,
          .summary = summary,
          .param_name = "m",
          .default_param = 1,
          .role = StrategyRole::overlapping,
          .tune_params = {1, 2, 4, 8},
          .query_split = query_split,
      },
      // all_gather_blocks as docs/method.md#weights-gradients-all-reduce-and-the-backward-pass
      // has it for GEMM + all-reduce (gemm_ar).
      {flash_all_gather_gemm, flash_gemm_reduce_scatter, flash_gemm_all_to_all,
       flash_all_to_all_gemm, all_gather_blocks_direct, flash_moe_layer});
}

}  // namespace fob
