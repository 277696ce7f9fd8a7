// Flash-Overlap's two halves, shared by flash and its query-split form flash_qs.
#pragma once

#include "fob/strategy.h"

namespace fob {

void flash_all_gather_gemm(PlanBuilder& b, const AgProblem& p, int m);
void flash_gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int m);
// Flash-All-to-All, Ulysses' two halves (flash_direct runs the same schedule).
void flash_gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int m);
void flash_all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int m);

// flash's table entry: flash_qs is a copy of it that splits queries.
extern const Strategy kFlash;

}  // namespace fob
