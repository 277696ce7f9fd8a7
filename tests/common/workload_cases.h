// The cases the executor and gpu tests run every workload at: small shapes that divide by 1..4
// ranks and by the strategies' parameters, whose loopback inputs repeat with a period above 1.
#pragma once

#include <string>
#include <vector>

#include "fob/workload.h"

namespace fob {

inline const std::vector<Workload>& every_workload() {
  static const std::vector<Workload> all = {
      Workload::ag_gemm,   Workload::gemm_rs,      Workload::mlp,
      Workload::ag_gemm_w, Workload::gemm_rs_grad, Workload::gemm_ar,
      Workload::mlp_bwd,   Workload::attn,         Workload::ulysses};
  return all;
}

// Every strategy the workload takes, the reference modes included.
inline std::vector<std::string> strategies_for(Workload w) {
  std::vector<std::string> s = {"compute_only", "comm_only",    "baseline",
                                "slicing:2",    "decompose",    "flash",
                                "flash:2",      "flash_direct", "flash_direct:3"};
  if (w == Workload::attn || w == Workload::ulysses) {
    s.push_back("flash_qs");
    s.push_back("flash_qs:2");
  }
  return s;
}

// M = 192 tokens in sequences of 96, hidden = ffn = 144, 12 heads of 12: every extent a rank
// holds at world 1..4 divides by 12, so loopback inputs repeat every 12 rows at least.
inline CaseSpec test_case(Workload w, const std::string& strategy, int world, DType dtype,
                          bool loopback = false) {
  CaseSpec spec;
  spec.workload = w;
  spec.shape = {2, 96, 144, 144};
  spec.shape.heads = 12;
  spec.dtype = dtype;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  spec.loopback = loopback;
  return spec;
}

}  // namespace fob
