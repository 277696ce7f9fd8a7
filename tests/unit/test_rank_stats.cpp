// nccl-tests' -a over ranks, and the straggler a summary row names: per-rank figures from the
// case's own timings, checked against cases made with a known slow rank.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/rank_stats.h"
#include "fob/results.h"

namespace fob {
namespace {

// A compute_only case of `per_rank.size()` ranks and 4 iterations: rank r's one GEMM of 1e9
// flops takes per_rank[r] seconds in every iteration, which is also its own step time.
CaseResult gemm_case(const std::vector<double>& per_rank) {
  CaseResult c = case_result({.strategy = "compute_only",
                              .batch = 8,
                              .seq = 8,
                              .hidden = 8,
                              .ffn = 8,
                              .world = static_cast<int32_t>(per_rank.size()),
                              .iters = 4});
  c.round_iters = {4};
  c.max_tasks = 1;
  for (int r = 0; r < c.world; ++r) {
    c.tasks.push_back(TaskRecord{r, 0, static_cast<int8_t>(StreamId::compute),
                                 static_cast<int8_t>(TaskKind::gemm), -1, 0, 1e9, "gemm"});
  }
  for (int i = 0; i < c.iters; ++i) {
    for (const double t : per_rank) {
      c.step_seconds.push_back(t * (1 + 0.01 * i));
      c.task_start.push_back(0);
      c.task_end.push_back(t * (1 + 0.01 * i));
    }
  }
  return c;
}

TEST(RankStats, MinAvgMaxOverRanksAndTheSlowestRank) {
  const RankSpread s = rank_spread(gemm_case({1e-3, 1e-3, 1e-3, 3e-3}));
  // Each rank's median over iterations 1.00, 1.01, 1.02, 1.03 times its time: 1.015x.
  EXPECT_NEAR(s.t_min, 1.015e-3, 1e-9);
  EXPECT_NEAR(s.t_avg, 1.5 * 1.015e-3, 1e-9);
  EXPECT_NEAR(s.t_max, 3 * 1.015e-3, 1e-9);
  EXPECT_EQ(s.slowest_rank, 3);
  EXPECT_EQ(s.slowest_gemm_rank, 3);
  // The median of the four iterations' rates, 1e12 over 1.00 ... 1.03 times the rank's time.
  const double rate = (1 / 1.01 + 1 / 1.02) / 2 * 1e12;
  EXPECT_NEAR(s.gemm_max, rate, 1e6);
  EXPECT_NEAR(s.gemm_min, rate / 3, 1e6);
  // 3 / 1.5 = 2 > 1.5 for the step; the average rate over rank 3's is (3+3+3+1)/4 = 2.5.
  const std::string doubt = straggler_doubt(s);
  EXPECT_NE(doubt.find("rank 3 straggles"), std::string::npos) << doubt;
  EXPECT_NE(doubt.find("2.00x the ranks' average"), std::string::npos) << doubt;
  EXPECT_NE(doubt.find("rank 3's GEMMs ran at"), std::string::npos) << doubt;
}

TEST(RankStats, RanksWithinOnePointFiveOfTheAverageAreNoStraggler) {
  const RankSpread s = rank_spread(gemm_case({1e-3, 1.2e-3, 1.4e-3}));
  EXPECT_EQ(s.slowest_rank, 2);
  EXPECT_EQ(straggler_doubt(s), "");
}

// Ranks whose GEMMs hold different work (moe: a rank's experts got fewer tokens) run other
// shapes at other rates: a low rate there says nothing of the rank's core.
TEST(RankStats, RanksOfUnequalWorkNameNoSlowGemms) {
  CaseResult c = gemm_case({1e-3, 1e-3, 1e-3, 1e-3});
  const RankSpread equal = rank_spread(c);
  EXPECT_TRUE(equal.same_gemm_work);
  c.tasks[3].flops = 1e8;  // rank 3: a tenth of the work in the same time, 1/10 the rate
  const RankSpread s = rank_spread(c);
  EXPECT_FALSE(s.same_gemm_work);
  EXPECT_EQ(s.slowest_gemm_rank, 3);
  EXPECT_EQ(straggler_doubt(s), "");
}

// The summary row carries the figures (the report and /summary read them) and the doubt.
TEST(RankStats, TheSummaryRowNamesTheStraggler) {
  const std::vector<Summary> rows = summarize({gemm_case({1e-3, 4e-3})});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].slowest_rank, 1);
  EXPECT_NEAR(rows[0].rank_t_max * 1e3, 4 * 1.015, 1e-6);
  EXPECT_NEAR(rows[0].rank_tflops_max, (1 / 1.01 + 1 / 1.02) / 2, 1e-6);
  EXPECT_NE(rows[0].doubts.find("rank 1 straggles"), std::string::npos) << rows[0].doubts;
}

// A case without timings, or whose arrays do not match its shape, has no per-rank figures.
TEST(RankStats, NoTimingsNoFigures) {
  CaseResult c = gemm_case({1e-3, 1e-3});
  c.step_seconds.pop_back();
  const RankSpread s = rank_spread(c);
  EXPECT_TRUE(std::isnan(s.t_max));
  EXPECT_EQ(s.slowest_rank, -1);
  EXPECT_EQ(straggler_doubt(s), "");
}

}  // namespace
}  // namespace fob
