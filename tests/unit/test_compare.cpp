// compare_results on synthetic files: matching by case fields, the t-interval verdicts in both
// directions, intervals over rounds, too few rounds, the gate's answer, unmatched and
// not-comparable cases, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compare_fixtures.h"
#include "fob/compare.h"
#include "fob/compare_report.h"
#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

using namespace compare_fixtures;  // NOLINT(google-build-using-namespace): the tests' fixtures

TEST(Compare, IdenticalSamplesDoNotRegress) {
  const std::vector<double> steps = noisy(10e-3, 0.05, 8, 1);
  const ResultFile f = file_of({make_case("0000", "flash", steps)});
  const Comparison c = compare_results(f, f, CompareMetric::t, 5);
  const CaseChange& ch = only_change(c);
  EXPECT_EQ(ch.verdict, Verdict::no_change);
  EXPECT_DOUBLE_EQ(ch.change, 0);
  EXPECT_LE(ch.ci_low, 0);
  EXPECT_GE(ch.ci_high, 0);
  EXPECT_EQ(c.count(Verdict::regressed), 0);
  EXPECT_LE(ch.detectable, 0.05);
  EXPECT_EQ(ch.rounds_needed, 0);
  // A zero threshold cannot be confirmed by an interval with any width: not a regression, but
  // inconclusive.
  EXPECT_EQ(only_change(compare_results(f, f, CompareMetric::t, 0)).verdict, Verdict::inconclusive);
}

TEST(Compare, ThirtyPercentSlowerIsARegression) {
  const ResultFile base = file_of({make_case("0000", "flash", noisy(10e-3, 0.02, 8, 1))});
  const ResultFile next = file_of({make_case("0000", "flash", noisy(13e-3, 0.02, 8, 2))});
  const CaseChange& ch = only_change(compare_results(base, next, CompareMetric::t, 5));
  EXPECT_EQ(ch.verdict, Verdict::regressed);
  EXPECT_NEAR(ch.change, 0.30, 0.05);
  EXPECT_GT(ch.ci_low, 0.05);
  EXPECT_LE(ch.ci_low, ch.change);
  EXPECT_GE(ch.ci_high, ch.change);
  // The other way round it is an improvement.
  EXPECT_EQ(only_change(compare_results(next, base, CompareMetric::t, 5)).verdict,
            Verdict::improved);
}

// In 30% noise the files cannot tell 2% from 20%: not a regression, and not "no change"
// either. The report says how far it can see and what would let it see 5%.
TEST(Compare, TwoPercentSlowerInLargeNoiseIsInconclusive) {
  const ResultFile base = file_of({make_case("0000", "flash", noisy(10e-3, 0.30, 5, 3))});
  const ResultFile next = file_of({make_case("0000", "flash", noisy(10.2e-3, 0.30, 5, 4))});
  const Comparison c = compare_results(base, next, CompareMetric::t, 5);
  const CaseChange& ch = only_change(c);
  EXPECT_EQ(ch.verdict, Verdict::inconclusive);
  EXPECT_LT(ch.ci_low, 0.05);
  EXPECT_GT(ch.detectable, 0.05);
  EXPECT_GT(ch.rounds_needed, 1);
  const std::string line = compare_result_line(c);
  EXPECT_EQ(line.rfind("Result: INCONCLUSIVE", 0), 0u) << line;
  EXPECT_NE(line.find("rounds per file"), std::string::npos) << line;
}

// exposed_comm crosses zero: 0.1 ms -> 0.3 ms exposed is +200% of a near-zero base, but 0.2 ms
// of a 10 ms step, well within 5% of it.
TEST(Compare, ExposedCommIsADifferenceInMilliseconds) {
  const CaseResult comp = make_case("0000", "compute_only", {10e-3, 10e-3, 10e-3, 10e-3});
  const CaseResult b = make_case("0001", "flash", {10.1e-3, 10.1e-3, 10.1e-3, 10.1e-3});
  const CaseResult n = make_case("0001", "flash", {10.3e-3, 10.3e-3, 10.3e-3, 10.3e-3});
  const CaseChange& ch = only_change(
      compare_results(file_of({comp, b}), file_of({comp, n}), CompareMetric::exposed_comm, 5));
  EXPECT_TRUE(ch.absolute);
  EXPECT_NEAR(ch.change, 0.2e-3, 1e-9);
  EXPECT_NEAR(ch.threshold, 0.05 * 10.1e-3, 1e-12);
  EXPECT_EQ(ch.verdict, Verdict::no_change);
  // Below T_comp (a noisy reference) the base is negative: still a difference, never a ratio.
  const CaseResult below = make_case("0001", "flash", {9.9e-3, 9.9e-3, 9.9e-3, 9.9e-3});
  const CaseChange& neg = only_change(
      compare_results(file_of({comp, below}), file_of({comp, n}), CompareMetric::exposed_comm, 5));
  EXPECT_NEAR(neg.change, 0.4e-3, 1e-9);
  EXPECT_EQ(neg.verdict, Verdict::no_change);
}

TEST(Compare, OutputIsDeterministic) {
  const ResultFile base = file_of({make_case("0000", "flash", noisy(10e-3, 0.2, 6, 5))});
  const ResultFile next = file_of({make_case("0000", "flash", noisy(11e-3, 0.2, 6, 6))});
  const CaseChange a = only_change(compare_results(base, next, CompareMetric::t, 5));
  const CaseChange b = only_change(compare_results(base, next, CompareMetric::t, 5));
  EXPECT_EQ(a.ci_low, b.ci_low);
  EXPECT_EQ(a.ci_high, b.ci_high);
}

TEST(Compare, CasesMatchByFieldsNotIds) {
  CaseResult b0 = make_case("0000", "baseline", {10e-3, 10e-3, 10e-3});
  CaseResult b1 = make_case("0001", "flash", {8e-3, 8e-3, 8e-3});
  CaseResult b2 = make_case("0002", "decompose", {9e-3, 9e-3, 9e-3});
  // NEW numbers its cases differently, lacks decompose, has another shape of flash.
  CaseResult n0 = make_case("0007", "flash", {8e-3, 8e-3, 8e-3});
  CaseResult n1 = make_case("0003", "baseline", {10e-3, 10e-3, 10e-3});
  CaseResult n2 = make_case("0000", "flash", {8e-3, 8e-3, 8e-3});
  n2.seq = 144;
  const Comparison c =
      compare_results(file_of({b0, b1, b2}), file_of({n0, n1, n2}), CompareMetric::t, 5);
  ASSERT_EQ(c.changes.size(), 2u);
  EXPECT_EQ(c.changes[0].key.strategy, "baseline");
  EXPECT_EQ(c.changes[0].new_id, "0003");
  EXPECT_EQ(c.changes[1].key.strategy, "flash");
  EXPECT_EQ(c.changes[1].new_id, "0007");
  ASSERT_EQ(c.only_base.size(), 1u);
  EXPECT_EQ(c.only_base[0].key.strategy, "decompose");
  ASSERT_EQ(c.only_new.size(), 1u);
  EXPECT_EQ(c.only_new[0].id, "0000");
  EXPECT_EQ(c.only_new[0].key.seq, 144);
}

TEST(Compare, BusbwRegressesWhenItDrops) {
  // Slower comm_only steps mean lower bandwidth: a drop past the threshold is the regression.
  const ResultFile base = file_of({make_case("0000", "comm_only", noisy(1e-3, 0.01, 7, 7)),
                                   make_case("0001", "flash", {1e-3, 1e-3, 1e-3})});
  const ResultFile next = file_of({make_case("0000", "comm_only", noisy(1.5e-3, 0.01, 7, 8)),
                                   make_case("0001", "flash", {1e-3, 1e-3, 1e-3})});
  const Comparison c = compare_results(base, next, CompareMetric::busbw, 5);
  const CaseChange& ch = only_change(c);
  EXPECT_EQ(ch.key.strategy, "comm_only");
  EXPECT_EQ(ch.verdict, Verdict::regressed);
  EXPECT_LT(ch.change, -0.25);
  EXPECT_LT(ch.ci_high, -0.05);
  EXPECT_EQ(c.skipped, 1);  // flash has no busbw
  // The median busbw is the summary's busbw at the median step.
  const std::vector<Summary> s = summarize(base.cases);
  EXPECT_NEAR(ch.base_median, s[0].busbw, 1e-9 * s[0].busbw);
  // Faster steps are an improvement, not a regression.
  EXPECT_EQ(only_change(compare_results(next, base, CompareMetric::busbw, 5)).verdict,
            Verdict::improved);
  // And for T the same files regress the other way.
  EXPECT_EQ(compare_results(base, next, CompareMetric::t, 5).count(Verdict::regressed), 1);
}

TEST(Compare, ExposedCommNeedsComputeOnly) {
  const CaseResult comp = make_case("0000", "compute_only", {6e-3, 6e-3, 6e-3, 6e-3});
  const CaseResult flash_b = make_case("0001", "flash", {8e-3, 8.1e-3, 7.9e-3, 8e-3});
  const CaseResult flash_n = make_case("0001", "flash", {10e-3, 10.1e-3, 9.9e-3, 10e-3});
  // With compute_only in both: exposed 2 ms -> 4 ms, +2 ms, past 5% of the 8 ms step.
  const Comparison ok = compare_results(file_of({comp, flash_b}), file_of({comp, flash_n}),
                                        CompareMetric::exposed_comm, 5);
  const CaseChange& ch = only_change(ok);
  EXPECT_NEAR(ch.base_median, 2e-3, 1e-9);
  EXPECT_NEAR(ch.new_median, 4e-3, 1e-9);
  EXPECT_EQ(ch.verdict, Verdict::regressed);
  EXPECT_EQ(ok.skipped, 1);  // compute_only itself
  // Without compute_only in NEW the case is listed as not comparable, with the reason.
  const Comparison missing =
      compare_results(file_of({comp, flash_b}), file_of({flash_n}), CompareMetric::exposed_comm, 5);
  EXPECT_TRUE(missing.changes.empty());
  ASSERT_EQ(missing.not_comparable.size(), 1u);
  EXPECT_NE(missing.not_comparable[0].reason.find("compute_only"), std::string::npos);
  EXPECT_NE(missing.not_comparable[0].reason.find("NEW"), std::string::npos);
  EXPECT_EQ(missing.only_base.size(), 1u);
}

TEST(Compare, FewerThanTwoIterationsIsNotComparable) {
  const ResultFile base = file_of({make_case("0000", "flash", {8e-3})});
  const ResultFile next = file_of({make_case("0000", "flash", {8e-3, 9e-3, 9e-3})});
  const Comparison c = compare_results(base, next, CompareMetric::t, 5);
  EXPECT_TRUE(c.changes.empty());
  ASSERT_EQ(c.not_comparable.size(), 1u);
  EXPECT_NE(c.not_comparable[0].reason.find("at least 2"), std::string::npos);
}

TEST(Compare, BadArgumentsAreInputErrors) {
  EXPECT_EQ(parse_compare_metric("T"), CompareMetric::t);
  EXPECT_EQ(parse_compare_metric("busbw"), CompareMetric::busbw);
  try {
    parse_compare_metric("bogus");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("exposed_comm"), std::string::npos);
  }
  EXPECT_EQ(parse_inconclusive_as("pass"), InconclusiveAs::pass);
  try {
    parse_inconclusive_as("maybe");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--inconclusive-as 'maybe'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("pass (exit 0)"), std::string::npos);
  }
  const ResultFile f = file_of({make_case("0000", "flash", {1e-3, 1e-3})});
  EXPECT_THROW(compare_results(f, f, CompareMetric::t, -1), InputError);
  EXPECT_THROW(compare_results(f, f, CompareMetric::t, std::nan("")), InputError);
}

TEST(Compare, RoundChangeOfAConstantShiftIsThatShift) {
  const RoundChange rc = round_change({{2, 2}, {2}, {2}}, {{3}, {3, 3}, {3}});
  EXPECT_DOUBLE_EQ(rc.change, 0.5);
  EXPECT_DOUBLE_EQ(rc.ci.low, 0.5);
  EXPECT_DOUBLE_EQ(rc.ci.high, 0.5);
  const RoundChange diff = round_change({{2, 2}, {2}}, {{3}, {3, 3}}, true);
  EXPECT_DOUBLE_EQ(diff.change, 1);
  // One round a side: no interval.
  EXPECT_TRUE(std::isnan(round_change({{2, 2}}, {{3}, {3}}).ci.low));
}

TEST(Compare, StudentTQuantiles) {
  EXPECT_DOUBLE_EQ(student_t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_975(4), 2.776);
  EXPECT_DOUBLE_EQ(student_t_975(30), 2.042);
  EXPECT_NEAR(student_t_975(1e9), 1.96, 1e-6);
  EXPECT_NEAR(student_t_975(60), 2.000, 0.003);
  EXPECT_NEAR(student_t_975(120), 1.980, 0.003);
  double last = 100;
  for (double df = 1; df < 500; df *= 1.1) {
    EXPECT_LT(student_t_975(df), last) << df;
    last = student_t_975(df);
  }
}

// Three rounds whose medians happen to agree still carry their iterations' spread: the interval
// is never of width 0 on measured values (a bootstrap of three rounds gave such intervals).
TEST(Compare, ThreeRoundsNeverGiveAZeroWidthInterval) {
  const RoundChange rc =
      round_change({{9, 10, 11}, {9.5, 10, 10.5}, {8, 10, 12}}, {{9, 10, 11}, {9, 10, 11}, {10}});
  EXPECT_DOUBLE_EQ(rc.change, 0);
  EXPECT_LT(rc.ci.low, -0.01);
  EXPECT_GT(rc.ci.high, 0.01);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const CaseResult b = rounds_case({10e-3, 10.1e-3, 9.9e-3}, 5, 0.02, seed);
    const CaseResult n = rounds_case({10e-3, 10.1e-3, 9.9e-3}, 5, 0.02, seed + 100);
    const CaseChange& ch =
        only_change(compare_results(file_of({b}), file_of({n}), CompareMetric::t, 5));
    EXPECT_GT(ch.ci_high - ch.ci_low, 0.001) << seed;
    EXPECT_NE(ch.verdict, Verdict::regressed) << seed;
  }
}

// Every round of NEW 8% slower than some round of BASE, but the rounds of each run spread over
// -10%..+15%: a drift of that size is what the rounds show either run capable of, so the shift is
// not a regression. Resampling single iterations would see 200 tight samples a side and call it
// one.
TEST(Compare, RoundLevelShiftWithinTheRoundSpreadIsNotARegression) {
  const std::vector<double> levels = {10e-3, 11e-3, 9.5e-3, 12e-3, 10.5e-3};
  std::vector<double> slower;
  for (const size_t r : {4, 0, 3, 2, 1}) slower.push_back(levels[r] * 1.08);
  const CaseResult b = rounds_case(levels, 40, 0.005, 10);
  const CaseResult n = rounds_case(slower, 40, 0.005, 20);
  const CaseChange& ch =
      only_change(compare_results(file_of({b}), file_of({n}), CompareMetric::t, 5));
  EXPECT_EQ(ch.base_rounds, 5);
  EXPECT_EQ(ch.new_rounds, 5);
  EXPECT_NEAR(ch.change, 0.08, 0.01);
  EXPECT_EQ(ch.verdict, Verdict::inconclusive);  // not a regression; nor proven no change
  EXPECT_LT(ch.ci_low, 0);
  EXPECT_GT(ch.ci_high, 0.15);

  // The same samples without rounds, as an older file holds them: one round a side is too few
  // to judge (its iterations would give a narrow interval that ignores the drift).
  CaseResult b1 = b, n1 = n;
  b1.round_iters.clear();
  n1.round_iters.clear();
  const CaseChange& flat =
      only_change(compare_results(file_of({b1}), file_of({n1}), CompareMetric::t, 5));
  EXPECT_EQ(flat.base_rounds, 1);
  EXPECT_EQ(flat.new_rounds, 1);
  EXPECT_EQ(flat.verdict, Verdict::too_few_rounds);
  EXPECT_TRUE(std::isnan(flat.ci_low));
}

TEST(Compare, ShiftOfEveryRoundPastTheSpreadIsARegression) {
  const std::vector<double> levels = {10e-3, 10.2e-3, 9.9e-3, 10.1e-3, 10e-3};
  std::vector<double> slower;
  for (const double l : levels) slower.push_back(l * 1.3);
  const ResultFile base = file_of({rounds_case(levels, 4, 0.01, 30)});
  const ResultFile next = file_of({rounds_case(slower, 4, 0.01, 40)});
  const CaseChange& ch = only_change(compare_results(base, next, CompareMetric::t, 5));
  EXPECT_EQ(ch.base_rounds, 5);
  EXPECT_EQ(ch.verdict, Verdict::regressed);
  EXPECT_GT(ch.ci_low, 0.2);
  EXPECT_EQ(only_change(compare_results(next, base, CompareMetric::t, 5)).verdict,
            Verdict::improved);
}

TEST(Compare, TheIntervalIsTheRoundChangeOfTheCasesRounds) {
  const ResultFile base = file_of({rounds_case({10e-3, 12e-3, 9e-3}, 3, 0.05, 50)});
  const ResultFile next = file_of({rounds_case({11e-3, 10e-3, 13e-3, 12e-3}, 2, 0.05, 60)});
  const CaseChange a = only_change(compare_results(base, next, CompareMetric::t, 5));
  EXPECT_EQ(a.base_rounds, 3);
  EXPECT_EQ(a.new_rounds, 4);
  const auto rounds = [](const CaseResult& c) {
    Rounds out;
    int i = 0;
    for (const int32_t n : c.round_iters) {
      out.emplace_back();
      for (int k = 0; k < n; ++k) out.back().push_back(c.step(i++));
    }
    return out;
  };
  const RoundChange direct = round_change(rounds(base.cases[0]), rounds(next.cases[0]));
  EXPECT_EQ(a.change, direct.change);
  EXPECT_EQ(a.ci_low, direct.ci.low);
  EXPECT_EQ(a.ci_high, direct.ci.high);
}

// A side with fewer than 3 rounds (an older file, --rounds 1 or 2) shows too little spread
// between rounds to judge a run's drift by: the case is not judged, and the gate is
// INCONCLUSIVE saying so. A round without a finite step does not count.
TEST(Compare, FewerThanThreeRoundsAreTooFewToJudge) {
  const CaseResult rounded = rounds_case({10e-3, 11e-3, 9e-3, 10e-3}, 3, 0.02, 80);
  CaseResult single = rounded;
  single.round_iters = {single.iters};
  const Comparison c = compare_results(file_of({single}), file_of({rounded}), CompareMetric::t, 5);
  const CaseChange& ch = only_change(c);
  EXPECT_EQ(ch.base_rounds, 1);
  EXPECT_EQ(ch.new_rounds, 4);
  EXPECT_EQ(ch.verdict, Verdict::too_few_rounds);
  const GateResult g = gate_result(c, InconclusiveAs::inconclusive);
  EXPECT_EQ(g.verdict, GateVerdict::inconclusive);
  EXPECT_EQ(g.exit_code, kExitInconclusive);
  EXPECT_NE(g.reason.find("fewer than 3 rounds"), std::string::npos) << g.reason;
  CaseResult two = rounded;
  two.round_iters = {6, 6};
  EXPECT_EQ(
      only_change(compare_results(file_of({two}), file_of({rounded}), CompareMetric::t, 5)).verdict,
      Verdict::too_few_rounds);

  CaseResult holed = make_case("0000", "flash", {10e-3, 10e-3, 10e-3, 11e-3, 11e-3});
  holed.round_iters = {2, 3};
  for (int r = 0; r < 2 * kWorld; ++r) holed.step_seconds[static_cast<size_t>(r)] = std::nan("");
  const CaseChange& h =
      only_change(compare_results(file_of({holed}), file_of({rounded}), CompareMetric::t, 5));
  EXPECT_EQ(h.base_rounds, 1);
  EXPECT_NEAR(h.base_median, 11e-3, 1e-12);
}

// The gate: PASS, FAIL, MISSING (NEW lacks BASE's cases: never a pass) and INCONCLUSIVE, each
// with its exit status and a reason; --inconclusive-as maps INCONCLUSIVE only.
TEST(Compare, TheGateAnswersWithAReason) {
  const CaseResult steady = make_case("0000", "flash", noisy(10e-3, 0.01, 8, 90));
  const CaseResult slower = make_case("0000", "flash", noisy(13e-3, 0.01, 8, 91));
  const CaseResult other = make_case("0001", "baseline", noisy(12e-3, 0.01, 8, 92));
  const ResultFile base = file_of({steady, other});
  GateResult g =
      gate_result(compare_results(base, base, CompareMetric::t, 5), InconclusiveAs::inconclusive);
  EXPECT_EQ(g.verdict, GateVerdict::pass);
  EXPECT_EQ(g.exit_code, kExitOk);
  EXPECT_NE(g.reason.find("2 case(s) cleared"), std::string::npos) << g.reason;

  g = gate_result(compare_results(base, file_of({slower, other}), CompareMetric::t, 5),
                  InconclusiveAs::pass);
  EXPECT_EQ(g.verdict, GateVerdict::fail);
  EXPECT_EQ(g.exit_code, kExitVerifyFailed);
  EXPECT_NE(g.reason.find("mlp flash"), std::string::npos) << g.reason;

  g = gate_result(compare_results(base, file_of({steady}), CompareMetric::t, 5),
                  InconclusiveAs::pass);
  EXPECT_EQ(g.verdict, GateVerdict::missing);
  EXPECT_EQ(g.exit_code, kExitMissingCases);
  EXPECT_NE(g.reason.find("mlp baseline"), std::string::npos) << g.reason;

  const ResultFile noisy_base = file_of({make_case("0000", "flash", noisy(10e-3, 0.3, 5, 93))});
  const ResultFile noisy_new = file_of({make_case("0000", "flash", noisy(10e-3, 0.3, 5, 94))});
  const Comparison wide = compare_results(noisy_base, noisy_new, CompareMetric::t, 5);
  EXPECT_EQ(gate_result(wide, InconclusiveAs::inconclusive).exit_code, kExitInconclusive);
  EXPECT_EQ(gate_result(wide, InconclusiveAs::pass).exit_code, kExitOk);
  EXPECT_EQ(gate_result(wide, InconclusiveAs::fail).exit_code, kExitVerifyFailed);
  EXPECT_EQ(gate_result(wide, InconclusiveAs::pass).verdict, GateVerdict::inconclusive);
}

// Wide only on the better side: faster rounds scattered in NEW cannot hide a slowdown past 5%,
// so the case clears the gate as "no regression" though it is not proven unchanged.
TEST(Compare, WideOnlyOnTheBetterSideIsNoRegression) {
  const ResultFile base = file_of({rounds_case({10e-3, 10e-3, 10e-3, 10e-3, 10e-3}, 5, 0.002, 7)});
  const ResultFile next =
      file_of({rounds_case({9.9e-3, 8.5e-3, 8.2e-3, 9.6e-3, 8.1e-3}, 5, 0.002, 8)});
  const Comparison c = compare_results(base, next, CompareMetric::t, 5);
  const CaseChange& ch = only_change(c);
  EXPECT_EQ(ch.verdict, Verdict::no_regression) << ch.ci_low << " " << ch.ci_high;
  EXPECT_LT(ch.ci_low, -0.05);
  EXPECT_LE(ch.ci_high, 0.05);
  EXPECT_EQ(ch.rounds_needed, 0);
  EXPECT_EQ(gate_result(c, InconclusiveAs::inconclusive).verdict, GateVerdict::pass);
  // The other way round the wide side is the worse one: never cleared (every NEW round here is
  // slower than every BASE round, so it is a regression).
  const Verdict back = only_change(compare_results(next, base, CompareMetric::t, 5)).verdict;
  EXPECT_TRUE(back == Verdict::regressed || back == Verdict::inconclusive) << to_string(back);
}

// A round whose slot ran in a slow phase (its speed probe past 1.6x the file's median, or its
// own median past 1.25x the case's lower quartile) is left out and counted, not averaged in,
// while 3 rounds remain and the slow ones are at most 40% of them.
TEST(Compare, RoundsOfASlowPhaseAreLeftOutAndNamed) {
  CaseResult slowed = rounds_case({10e-3, 20e-3, 10e-3, 10.1e-3, 9.9e-3}, 5, 0.002, 11);
  const CaseResult steady = rounds_case({10e-3, 10e-3, 10.1e-3, 9.9e-3, 10e-3}, 5, 0.002, 12);
  slowed.round_probe = {1e-4, 2e-4, 1e-4, 1.05e-4, 0.95e-4};
  const CaseChange& ch =
      only_change(compare_results(file_of({steady}), file_of({slowed}), CompareMetric::t, 5));
  EXPECT_EQ(ch.new_slow, 1);
  EXPECT_EQ(ch.new_rounds, 4);
  EXPECT_EQ(ch.base_slow, 0);
  EXPECT_EQ(ch.verdict, Verdict::no_change);
  // Without probes the round's own time names it.
  CaseResult unprobed = slowed;
  unprobed.round_probe.clear();
  const CaseChange& own =
      only_change(compare_results(file_of({steady}), file_of({unprobed}), CompareMetric::t, 5));
  EXPECT_EQ(own.new_slow, 1);
  EXPECT_EQ(own.verdict, Verdict::no_change);
  // A round 1.2x slower is within a phase's reach of noise: it counts, and the interval says so.
  CaseResult mild = rounds_case({10e-3, 12e-3, 10e-3, 10.1e-3, 9.9e-3}, 5, 0.002, 11);
  const CaseChange& kept =
      only_change(compare_results(file_of({steady}), file_of({mild}), CompareMetric::t, 5));
  EXPECT_EQ(kept.new_slow, 0);
  EXPECT_EQ(kept.verdict, Verdict::inconclusive);
  // Three rounds, one slow: nothing is left out (too few would remain).
  CaseResult three = rounds_case({10e-3, 20e-3, 10e-3}, 5, 0.002, 13);
  three.round_probe = {1e-4, 2e-4, 1e-4};
  EXPECT_EQ(only_change(compare_results(file_of({steady}), file_of({three}), CompareMetric::t, 5))
                .new_slow,
            0);
  // Four of nine rounds probed slow: more than 40%, so that is how the machine ran, and every
  // round counts; three of nine are left out.
  CaseResult nine = rounds_case(std::vector<double>(9, 10e-3), 5, 0.002, 14);
  nine.round_probe = {1e-4, 2e-4, 1e-4, 2e-4, 1e-4, 2e-4, 1e-4, 2e-4, 1e-4};
  EXPECT_EQ(only_change(compare_results(file_of({steady}), file_of({nine}), CompareMetric::t, 5))
                .new_slow,
            0);
  nine.round_probe[7] = 1e-4;
  EXPECT_EQ(only_change(compare_results(file_of({steady}), file_of({nine}), CompareMetric::t, 5))
                .new_slow,
            3);
}

// The interconnect gate: comm_only's busbw decides, a noisy compute_only does not hold it up
// (where --gate all is INCONCLUSIVE on it), and exposed communication is shown beside: its
// regression is reported, not a FAIL (it carries the compute's drift between runs).
TEST(Compare, TheInterconnectGateJudgesWhatTheLinkDecides) {
  const auto file = [](double comm, double flash, uint64_t seed) {
    return file_of({make_case("0000", "compute_only", noisy(6e-3, 0.5, 8, seed)),
                    make_case("0001", "comm_only", noisy(comm, 0.01, 8, seed + 1)),
                    make_case("0002", "flash", noisy(flash, 0.01, 8, seed + 2))});
  };
  const ResultFile base = file(4e-3, 8e-3, 100), same = file(4e-3, 8e-3, 200);
  const std::vector<Comparison> parts =
      gate_parts(base, same, GateMode::interconnect, CompareMetric::t, 5);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].metric, CompareMetric::busbw);
  EXPECT_EQ(parts[0].role, GateRole::decides);
  EXPECT_EQ(parts[1].role, GateRole::reported);
  EXPECT_EQ(parts[2].role, GateRole::reported);
  EXPECT_EQ(gate_result(parts, InconclusiveAs::inconclusive).verdict, GateVerdict::pass);
  EXPECT_EQ(gate_result(gate_parts(base, same, GateMode::all, CompareMetric::t, 5),
                        InconclusiveAs::inconclusive)
                .verdict,
            GateVerdict::inconclusive);
  // A slower link: busbw drops, the gate fails, naming the figure.
  const GateResult slow = gate_result(
      gate_parts(base, file(5e-3, 8e-3, 300), GateMode::interconnect, CompareMetric::t, 5),
      InconclusiveAs::pass);
  EXPECT_EQ(slow.verdict, GateVerdict::fail);
  EXPECT_NE(slow.reason.find("busbw of mlp comm_only"), std::string::npos) << slow.reason;
  // The same link but 6 ms more exposed in flash: shown as a regression, the gate passes.
  const std::vector<Comparison> exposed =
      gate_parts(base, file(4e-3, 14e-3, 400), GateMode::interconnect, CompareMetric::t, 5);
  EXPECT_EQ(exposed[1].count(Verdict::regressed), 1);
  EXPECT_EQ(gate_result(exposed, InconclusiveAs::fail).verdict, GateVerdict::pass);
  EXPECT_EQ(parse_gate_mode("interconnect"), GateMode::interconnect);
  EXPECT_THROW(parse_gate_mode("auto"), InputError);
}

// A file measured while other work kept the host busy (host_others_cpus in its facts; a speed
// probe cannot see such work) cannot tell a slower link from a slower machine: what got worse
// is INCONCLUSIVE, naming the load, not a FAIL, unless the load was BASE's alone (it slowed
// BASE, hiding a regression rather than making one). The probes' medians are reported, not
// judged.
TEST(Compare, ALoadedHostMakesARegressionInconclusive) {
  const auto file = [](double comm, double probe, uint64_t seed) {
    CaseResult c = make_case("0001", "comm_only", noisy(comm, 0.01, 8, seed));
    c.round_probe.assign(c.round_iters.size(), probe);
    return file_of({c});
  };
  const ResultFile base = file(4e-3, 1e-4, 1);
  // Probes 2x apart alone: the drop is a FAIL, and the ratio is reported.
  const Comparison c = compare_results(base, file(6e-3, 2e-4, 2), CompareMetric::busbw, 5);
  EXPECT_DOUBLE_EQ(c.host_speed_ratio(), 2);
  EXPECT_EQ(host_speed_note(c), "");
  EXPECT_EQ(gate_result(
                gate_parts(base, file(6e-3, 2e-4, 3), GateMode::interconnect, CompareMetric::t, 5),
                InconclusiveAs::inconclusive)
                .verdict,
            GateVerdict::fail);
  // Other work on the host (host_others_cpus in the facts; a speed probe cannot see it): the drop
  // is INCONCLUSIVE, naming the load.
  ResultFile loaded = file(6e-3, 1e-4, 4);
  loaded.cases[0].facts = {"rank 0: host_others_cpus=1.950"};
  const GateResult load = gate_result(
      gate_parts(base, loaded, GateMode::interconnect, CompareMetric::t, 5), InconclusiveAs::fail);
  EXPECT_EQ(load.verdict, GateVerdict::inconclusive);
  EXPECT_EQ(load.exit_code, kExitVerifyFailed);
  EXPECT_NE(load.reason.find(
                "busy with other work: it kept (not recorded) of its CPUs busy while BASE ran "
                "and 1.95 while NEW ran"),
            std::string::npos)
      << load.reason;
  EXPECT_DOUBLE_EQ(median_host_load(loaded), 1.95);
  // The load on BASE's side only: it slowed BASE, so NEW's drop is no artefact of it: FAIL.
  const GateResult base_loaded = gate_result(
      gate_parts(loaded, file(9e-3, 1e-4, 6), GateMode::interconnect, CompareMetric::t, 5),
      InconclusiveAs::inconclusive);
  EXPECT_EQ(base_loaded.verdict, GateVerdict::fail) << base_loaded.reason;
  EXPECT_EQ(base_loaded.exit_code, kExitVerifyFailed);
  // Both loaded about alike, NEW a little the less: INCONCLUSIVE still, since the load slowed
  // each side by its own amount. BASE busier by half a CPU or more: FAIL.
  for (const auto& [facts, verdict] :
       {std::pair{"rank 0: host_others_cpus=1.990", GateVerdict::inconclusive},
        std::pair{"rank 0: host_others_cpus=1.900", GateVerdict::inconclusive},
        std::pair{"rank 0: host_others_cpus=1.400", GateVerdict::fail}}) {
    ResultFile other = file(14e-3, 1e-4, 7);
    other.cases[0].facts = {facts};
    EXPECT_EQ(gate_result(gate_parts(loaded, other, GateMode::interconnect, CompareMetric::t, 5),
                          InconclusiveAs::inconclusive)
                  .verdict,
              verdict)
        << facts;
  }
  // An interval the load made too wide to judge says so too: what to change is the machine.
  CaseResult wide = make_case("0001", "comm_only", noisy(4.15e-3, 0.08, 8, 5));
  wide.facts = {"rank 0: host_others_cpus=1.950"};
  const GateResult unsure =
      gate_result(gate_parts(base, file_of({wide}), GateMode::interconnect, CompareMetric::t, 5),
                  InconclusiveAs::inconclusive);
  EXPECT_EQ(unsure.verdict, GateVerdict::inconclusive);
  EXPECT_NE(unsure.reason.find("or an idle machine: the host was busy with other work"),
            std::string::npos)
      << unsure.reason;
}

// JUnit XML carries names from files anyone may have written: escaped, valid UTF-8, one line.
TEST(Compare, JunitEscapesWhatTheFilesHold) {
  CaseResult b = make_case("0000", "flash", noisy(10e-3, 0.01, 8, 95));
  b.workload = "a<b&\"c'\x01\xff\nd";
  const ResultFile base = file_of({b});
  Comparison c = compare_results(base, file_of({}), CompareMetric::t, 5);
  ASSERT_EQ(c.only_base.size(), 1u);
  std::ostringstream out;
  const ResultFile none = file_of({});
  write_compare_junit(out, {c}, {"BASE", "b<1>.h5", base}, {"NEW", "n&.h5", none});
  const std::string xml = out.str();
  EXPECT_EQ(xml.find("a<b"), std::string::npos) << xml;
  EXPECT_NE(xml.find("a&lt;b&amp;&quot;c&apos;"), std::string::npos) << xml;
  EXPECT_NE(xml.find("value=\"b&lt;1&gt;.h5\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_EQ(xml.find('\xff'), std::string::npos);  // U+FFFD instead: valid UTF-8
  EXPECT_NE(xml.find("<failure type=\"missing\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\""), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"gate\" value=\"MISSING\"/>"), std::string::npos) << xml;
}

// One percentile for the summary's p90/p99: linear between neighbours, the nearer one beside an
// infinity.
TEST(Percentile, InterpolatesAndNeverMakesNaNFromInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(percentile({1, 3}, 0.5), 2);
  EXPECT_EQ(percentile({1, 2, 3, 5}, 1.0), 5);
  EXPECT_EQ(percentile({1, inf}, 0.25), 1);
  EXPECT_EQ(percentile({1, inf}, 0.75), inf);
  EXPECT_EQ(percentile({-inf, inf}, 0.5 + 1e-9), inf);
}

}  // namespace
}  // namespace fob
