// The shape of a mixture-of-experts layer (workload `moe`): the config keys experts, top_k,
// expert_ffn, moe_skew, capacity_factor and moe_seed. Every other workload leaves it at its
// zeros, which is also what results files of other workloads record.
#pragma once

#include <cstdint>

namespace fob {

struct MoeShape {
  int64_t experts = 0;         // E, the experts of the layer over all ranks; 0: the default, 8
  int64_t top_k = 0;           // k, the experts each token is routed to; 0: the default, 2
  int64_t expert_ffn = 0;      // F, each expert's FFN width; 0: the shape's ffn
  double skew = 0;             // Zipf exponent of the router's expert popularity; 0 uniform
  double capacity_factor = 0;  // tokens an expert takes from a rank, over the even share; 0: no cap
  int64_t seed = 0;            // the router's seed, apart from the inputs'; 0: the default, 1

  static constexpr int64_t kDefaultExperts = 8;
  static constexpr int64_t kDefaultTopK = 2;
  static constexpr int64_t kDefaultSeed = 1;
  // Spelled out rather than defaulted: the cuda kernels include this header (through types.h)
  // and nvcc compiles them as C++17.
  bool operator==(const MoeShape& o) const {
    return experts == o.experts && top_k == o.top_k && expert_ffn == o.expert_ffn &&
           skew == o.skew && capacity_factor == o.capacity_factor && seed == o.seed;
  }
  bool operator!=(const MoeShape& o) const { return !(*this == o); }
};

}  // namespace fob
