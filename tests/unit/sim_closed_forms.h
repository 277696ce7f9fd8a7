// The simulator's closed-form fixtures (test_sim.cpp, test_sim_sharing.cpp): a shape whose
// tokens divide by 64 ranks times 16 slices, and rates chosen so that one rank-block's GEMM takes
// exactly g and one block's message exactly c (powers of two, so the arithmetic is exact).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/sim.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob::sim_test {

inline const int kWorlds[] = {2, 4, 8, 16, 64};
inline const double kInf = std::numeric_limits<double>::infinity();

// Tokens divide by 64 ranks times 16 slices.
inline Shape test_shape() {
  Shape s;
  s.batch = 1;
  s.seq = 1024;
  s.hidden = 128;
  s.ffn = 512;
  return s;
}

inline std::vector<Plan> plans_for(Workload w, const std::string& strategy, int world) {
  CaseSpec spec;
  spec.workload = w;
  spec.shape = test_shape();
  spec.dtype = DType::fp32;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return make_plans(spec);
}

// One rank-block: M/N rows of X times this rank's [D, F/N] weight (the reduce-scatter GEMM has
// the same flops per block), and M/N rows of D fp32 values on the wire.
inline UniformCost cost_for(int world, double g, double c, double latency = 0) {
  const Shape s = test_shape();
  const double rows = static_cast<double>(s.tokens() / world);
  const double block_flops =
      2.0 * rows * static_cast<double>(s.hidden) * static_cast<double>(s.ffn / world);
  const double block_bytes = rows * static_cast<double>(s.hidden) * 4.0;
  return UniformCost(block_flops / g, kInf, latency, block_bytes / c);
}

inline double simulated_step(Workload w, const std::string& strategy, int world, double g,
                             double c) {
  return simulate_case(plans_for(w, strategy, world), cost_for(world, g, c), "0000").step(0);
}

// g and c regimes: transfer faster than, equal to, and slower than one block's compute.
struct Regime {
  double g, c;
};
inline const Regime kRegimes[] = {
    {1.0 / 1024, 1.0 / 4096}, {1.0 / 1024, 1.0 / 1024}, {1.0 / 2048, 1.0 / 512}};

#define EXPECT_CLOSE(actual, expected) EXPECT_NEAR(actual, expected, 1e-12 * (expected))

}  // namespace fob::sim_test
