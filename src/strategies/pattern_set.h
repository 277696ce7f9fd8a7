// The six collective patterns of a strategy that implements them all, in Strategy's order:
// its table entry names its functions once, in one list, and with_patterns() puts them in
// their slots.
#pragma once

#include <tuple>

#include "fob/strategy.h"

namespace fob {

struct PatternSet {
  decltype(Strategy::all_gather_gemm) all_gather_gemm = nullptr;
  decltype(Strategy::gemm_reduce_scatter) gemm_reduce_scatter = nullptr;
  decltype(Strategy::gemm_all_to_all) gemm_all_to_all = nullptr;
  decltype(Strategy::all_to_all_gemm) all_to_all_gemm = nullptr;
  decltype(Strategy::all_gather_blocks) all_gather_blocks = nullptr;
  decltype(Strategy::moe_layer) moe_layer = nullptr;
};

// `entry` (name, summary, role and the rest) with the patterns of `set`.
constexpr Strategy with_patterns(Strategy entry, const PatternSet& set) {
  std::tie(entry.all_gather_gemm, entry.gemm_reduce_scatter, entry.gemm_all_to_all,
           entry.all_to_all_gemm, entry.all_gather_blocks, entry.moe_layer) =
      std::tie(set.all_gather_gemm, set.gemm_reduce_scatter, set.gemm_all_to_all,
               set.all_to_all_gemm, set.all_gather_blocks, set.moe_layer);
  return entry;
}

}  // namespace fob
