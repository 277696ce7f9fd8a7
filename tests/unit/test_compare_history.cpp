// Many runs, one verdict: runs of one setting pooled into one side (each run's rounds among the
// rounds the interval is taken over), files of other settings or cases refused, and a history's
// tolerance, max(threshold, k sigma of its runs).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compare_fixtures.h"
#include "fob/compare.h"
#include "fob/compare_history.h"
#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

using namespace compare_fixtures;  // NOLINT(google-build-using-namespace): the tests' fixtures

// A run whose five tight rounds sit at `level`: a machine whose runs differ by more than its
// rounds do.
ResultFile run_at(double level, uint64_t seed) {
  return file_of({rounds_case(std::vector<double>(5, level), 5, 0.002, seed)});
}

TEST(ComparePool, PooledRunsHoldEveryRunsRounds) {
  const ResultFile pooled = pool_results({run_at(10e-3, 1), run_at(11e-3, 2)}, {"a.h5", "b.h5"});
  ASSERT_EQ(pooled.cases.size(), 1u);
  const CaseResult& c = pooled.cases[0];
  EXPECT_EQ(c.iters, 50);
  EXPECT_EQ(c.round_iters, std::vector<int32_t>(10, 5));
  EXPECT_EQ(c.step_seconds.size(), 50u * kWorld);
  EXPECT_TRUE(c.arrays_match());
}

// One pair of runs 6% apart calls a regression that two runs of each side, pooled, see as the
// runs' own spread: the same two settings, the between-run drift now inside the interval.
TEST(ComparePool, PoolingPutsTheDriftBetweenRunsInTheInterval) {
  const ResultFile base_a = run_at(10e-3, 1), base_b = run_at(10.6e-3, 2);
  const ResultFile new_a = run_at(10e-3, 3), new_b = run_at(10.6e-3, 4);
  EXPECT_EQ(only_change(compare_results(base_a, new_b, CompareMetric::t, 5)).verdict,
            Verdict::regressed);
  const ResultFile base = pool_results({base_a, base_b}, {"b1", "b2"});
  const ResultFile next = pool_results({new_a, new_b}, {"n1", "n2"});
  const CaseChange& ch = only_change(compare_results(base, next, CompareMetric::t, 5));
  EXPECT_NE(ch.verdict, Verdict::regressed);
  EXPECT_EQ(ch.base_rounds, 10);
  EXPECT_LT(ch.ci_low, 0);
  EXPECT_GT(ch.ci_high, 0);
}

TEST(ComparePool, RunsOfAnotherSettingOrOtherCasesAreRefused) {
  ResultFile emulated = run_at(10e-3, 2);
  emulated.system.link_emulation = "emulated: 3 Gbit/s, 0 us latency per transfer";
  try {
    pool_results({run_at(10e-3, 1), emulated}, {"a.h5", "b.h5"});
    FAIL() << "pooled runs of two link settings";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("b.h5"), std::string::npos) << what;
    EXPECT_NE(what.find("link emulation"), std::string::npos) << what;
  }
  ResultFile more = run_at(10e-3, 3);
  more.cases.push_back(make_case("0001", "comm_only", {1e-3, 1e-3}));
  EXPECT_THROW(pool_results({run_at(10e-3, 1), more}, {"a.h5", "c.h5"}), InputError);
  EXPECT_THROW(pool_results({more, run_at(10e-3, 1)}, {"c.h5", "a.h5"}), InputError);
}

// A history whose runs spread by about 4% widens a 5% threshold to about 3 sigma: a NEW run 8%
// slower is within it, one 30% slower is not.
TEST(CompareHistory, ToleranceIsKSigmaOfTheRunsWhereWider) {
  std::vector<ResultFile> history;
  std::vector<std::string> paths;
  const double levels[] = {10e-3, 10.4e-3, 9.6e-3, 10.5e-3, 9.7e-3};
  for (int i = 0; i < 5; ++i) {
    history.push_back(run_at(levels[i], 10 + i));
    paths.push_back("h" + std::to_string(i));
  }
  const ResultFile base = pool_results(history, paths);
  for (const double slower : {1.08, 1.30}) {
    Comparison c = compare_results(base, run_at(10e-3 * slower, 30), CompareMetric::t, 5);
    EXPECT_EQ(apply_history_tolerance(c, history, 3), 1);
    const CaseChange& ch = only_change(c);
    EXPECT_GT(ch.threshold, 0.10);
    EXPECT_LT(ch.threshold, 0.16);
    EXPECT_EQ(ch.verdict == Verdict::regressed, slower > 1.2) << slower;
  }
  // A history steadier than the threshold leaves it as it was.
  const std::vector<ResultFile> steady = {run_at(10e-3, 40), run_at(10.01e-3, 41)};
  Comparison c =
      compare_results(pool_results(steady, {"s1", "s2"}), run_at(10e-3, 42), CompareMetric::t, 5);
  EXPECT_EQ(apply_history_tolerance(c, steady, 3), 0);
  EXPECT_DOUBLE_EQ(only_change(c).threshold, 0.05);
}

}  // namespace
}  // namespace fob
