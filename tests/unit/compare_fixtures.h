// Synthetic results files for the compare tests: cases of known step times, in rounds.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/compare.h"
#include "fob/plan.h"
#include "fob/results.h"

namespace fob {
namespace compare_fixtures {

inline constexpr int kWorld = 2;

// A case whose slowest rank took `steps[i]` in iteration i (rank 0 a little less), each
// iteration a round of its own.
inline CaseResult make_case(const std::string& id, const std::string& strategy,
                            const std::vector<double>& steps) {
  CaseResult c = case_result({.id = id,
                              .workload = "mlp",
                              .strategy = strategy,
                              .seq = 72,
                              .hidden = 33,
                              .ffn = 96,
                              .world = kWorld,
                              .iters = static_cast<int32_t>(steps.size())});
  c.round_iters.assign(steps.size(), 1);
  for (const double s : steps) {
    c.step_seconds.push_back(0.9 * s);
    c.step_seconds.push_back(s);
  }
  if (strategy == "comm_only") {
    // One all-gather per rank, sending 1 MB: busbw's size comes from rank 0's sent bytes.
    c.max_tasks = 1;
    for (int r = 0; r < kWorld; ++r) {
      c.tasks.push_back(TaskRecord{r, 0, static_cast<int8_t>(StreamId::comm),
                                   static_cast<int8_t>(TaskKind::collective), -1, 1000000, 0,
                                   "all-gather"});
    }
    for (size_t i = 0; i < steps.size() * kWorld; ++i) {
      c.task_start.push_back(0);
      c.task_end.push_back(1e-3);
    }
  }
  return c;
}

// `n` samples around `center`, each off by up to +-`noise` (relative), reproducibly.
inline std::vector<double> noisy(double center, double noise, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const double u = static_cast<double>(rng() % 10001) / 10000.0;  // [0, 1]
    out.push_back(center * (1 + noise * (2 * u - 1)));
  }
  return out;
}

// A case measured in rounds: `per_round` iterations around each of `levels`, off by up to
// +-`noise` (relative). Tight rounds at distant levels are a machine that drifts between rounds.
inline CaseResult rounds_case(const std::vector<double>& levels, int per_round, double noise,
                              uint64_t seed) {
  std::vector<double> steps;
  for (size_t r = 0; r < levels.size(); ++r) {
    const std::vector<double> round = noisy(levels[r], noise, per_round, seed + r);
    steps.insert(steps.end(), round.begin(), round.end());
  }
  CaseResult c = make_case("0000", "flash", steps);
  c.round_iters.assign(levels.size(), per_round);
  return c;
}

inline ResultFile file_of(std::vector<CaseResult> cases, const std::string& link = "none") {
  ResultFile f;
  f.system.world_size = kWorld;
  f.system.link_emulation = link;
  f.cases = std::move(cases);
  return f;
}

// A copy, not a reference: callers pass compare_results()'s temporary, which a reference into
// would outlive (a use after free that passed or failed with what the heap held).
inline CaseChange only_change(const Comparison& c) {
  EXPECT_EQ(c.changes.size(), 1u);
  return c.changes.at(0);
}

}  // namespace compare_fixtures
}  // namespace fob
