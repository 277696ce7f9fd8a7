// The one place tests build a CaseResult's header (which case, of what shape, how measured), so
// that a field added to CaseResult is filled here for every test. Fields default to a small
// ag_gemm case with CaseResult's own defaults for what was measured:
//   CaseResult c = case_result({.id = "0001", .strategy = "flash", .world = 2, .iters = 3});
// Tests add the timings and tasks they need.
#pragma once

#include <cstdint>
#include <string>

#include "fob/results.h"

namespace fob {

struct CaseHeader {
  std::string id = "0000";
  std::string workload = "ag_gemm";
  std::string strategy = "baseline";
  int64_t batch = 2, seq = 8, hidden = 4, ffn = 16;
  int64_t heads = 0;
  int64_t experts = 0, top_k = 0, expert_ffn = 0;
  double moe_skew = 0, capacity_factor = 0;
  int64_t moe_seed = 0;
  std::string dtype = "fp32";
  int32_t world = 1;
  int32_t iters = 0;
  int32_t warmup = 0;
  int32_t verified = -1;  // 1 passed, 0 failed, -1 not checked
};

inline CaseResult case_result(const CaseHeader& h) {
  CaseResult c;
  // Every field of the key by position: one added to CaseKey fails to compile (-Wextra) here.
  static_cast<CaseKey&>(c) =
      CaseKey{h.workload, h.strategy,        h.batch,    h.seq,   h.hidden,
              h.ffn,      h.heads,           h.experts,  h.top_k, h.expert_ffn,
              h.moe_skew, h.capacity_factor, h.moe_seed, h.dtype, h.world};
  c.id = h.id;
  c.iters = h.iters;
  c.warmup = h.warmup;
  c.verified = h.verified;
  return c;
}

}  // namespace fob
