// measured_concurrency() against hand-built timelines: partial, none, full, tasks that overlap
// on one stream, several ranks, the median over iterations, and the cases where it is NaN; and
// the `concurrency` column it fills in the summary and the report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/report.h"
#include "fob/results.h"

namespace fob {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One task of a hand-built timeline, in seconds from the iteration's start.
struct Span {
  StreamId stream;
  double start, end;
};

// timeline[i][r]: rank r's tasks in iteration i. Every rank gets the same task count (the most
// any (iteration, rank) has), padded with rows of task = -1 whose times are deliberately not
// NaN: padding must be skipped by its task id, not by luck.
CaseResult make_case(const std::string& strategy,
                     const std::vector<std::vector<std::vector<Span>>>& timeline) {
  CaseResult c = case_result({.workload = "mlp",
                              .strategy = strategy,
                              .world = static_cast<int32_t>(timeline.at(0).size()),
                              .iters = static_cast<int32_t>(timeline.size())});
  size_t most = 0;
  for (const auto& iter : timeline) {
    for (const auto& rank : iter) most = std::max(most, rank.size());
  }
  c.max_tasks = static_cast<int32_t>(most) + 1;
  // Task records come from iteration 0 (the plan is the same in every iteration).
  for (int r = 0; r < c.world; ++r) {
    const std::vector<Span>& tasks = timeline[0][r];
    for (int t = 0; t < c.max_tasks; ++t) {
      TaskRecord rec;
      rec.rank = r;
      rec.task = t < static_cast<int>(tasks.size()) ? t : -1;
      rec.stream = static_cast<int8_t>(rec.task >= 0 ? tasks[t].stream : StreamId::compute);
      c.tasks.push_back(rec);
    }
  }
  for (const auto& iter : timeline) {
    double slowest = 0;
    for (int r = 0; r < c.world; ++r) {
      for (int t = 0; t < c.max_tasks; ++t) {
        const bool real = t < static_cast<int>(iter[r].size());
        c.task_start.push_back(real ? iter[r][t].start : 0.0);
        c.task_end.push_back(real ? iter[r][t].end : 100.0);
        if (real) slowest = std::max(slowest, iter[r][t].end);
      }
    }
    for (int r = 0; r < c.world; ++r) c.step_seconds.push_back(slowest);
  }
  return c;
}

// One iteration, one rank.
CaseResult one_rank(const std::vector<Span>& tasks, const std::string& strategy = "flash") {
  return make_case(strategy, {{tasks}});
}

constexpr StreamId kComp = StreamId::compute;
constexpr StreamId kComm = StreamId::comm;

TEST(Concurrency, PartialOverlapIsTheSharedTimeOverCommBusyTime) {
  // Compute 0..4, comm 2..6: 2 of the comm stream's 4 busy seconds have compute beside them.
  EXPECT_DOUBLE_EQ(measured_concurrency(one_rank({{kComp, 0, 4}, {kComm, 2, 6}})), 0.5);
  // The same with compute split in two around an idle gap 1..3: only 3..4 is shared.
  EXPECT_DOUBLE_EQ(measured_concurrency(one_rank({{kComp, 0, 1}, {kComp, 3, 4}, {kComm, 2, 6}})),
                   0.25);
}

TEST(Concurrency, BlockingScheduleHasNone) {
  // baseline: all-gather, then the GEMM, then reduce-scatter; touching ends share no time.
  const CaseResult c = one_rank({{kComm, 0, 2}, {kComp, 2, 3}, {kComm, 3, 5}}, "baseline");
  EXPECT_EQ(measured_concurrency(c), 0.0);
}

TEST(Concurrency, CommInsideComputeIsFull) {
  EXPECT_DOUBLE_EQ(measured_concurrency(one_rank({{kComp, 0, 3}, {kComm, 1, 2}})), 1.0);
  // Compute inside comm: only the comm time with compute beside it counts (1 of 3 s).
  EXPECT_DOUBLE_EQ(measured_concurrency(one_rank({{kComm, 0, 3}, {kComp, 1, 2}})), 1.0 / 3.0);
}

TEST(Concurrency, TasksOverlappingOnOneStreamCountOnce) {
  // Comm tasks 0..4 and 1..3 busy the comm stream 4 s (not 6); compute 3..5 shares 1 s of it.
  // Summing per-task durations would give 1/6.
  EXPECT_DOUBLE_EQ(measured_concurrency(one_rank({{kComm, 0, 4}, {kComm, 1, 3}, {kComp, 3, 5}})),
                   0.25);
  // Compute tasks 0..2 and 1..3 cover 0..3 of the comm stream's 0..4: 3/4 (summing gives 1).
  EXPECT_DOUBLE_EQ(measured_concurrency(one_rank({{kComp, 0, 2}, {kComp, 1, 3}, {kComm, 0, 4}})),
                   0.75);
}

TEST(Concurrency, RanksAreSummedBeforeDividing) {
  // Rank 0: 1 s of comm, all beside compute. Rank 1: 3 s of comm, none beside compute.
  // (1 + 0) / (1 + 3) = 0.25; the mean of the ranks' ratios would be 0.5.
  const CaseResult c = make_case("flash", {{{{kComp, 0, 2}, {kComm, 0, 1}},  // rank 0
                                            {{kComp, 0, 1}, {kComm, 1, 4}}}});
  ASSERT_EQ(c.world, 2);
  EXPECT_DOUBLE_EQ(measured_concurrency(c), 0.25);
  // A rank's compute never overlaps another rank's comm: rank 0 computes 0..2 while rank 1
  // communicates 1..4, and that is not concurrency.
  const CaseResult cross = make_case("flash", {{{{kComp, 0, 2}}, {{kComm, 1, 4}}}});
  EXPECT_EQ(measured_concurrency(cross), 0.0);
}

TEST(Concurrency, MedianOverIterations) {
  // Per-iteration values 0.2, 0.9, 0.5 (comm 0..10 each time): the median is 0.5, the mean
  // would be 0.5333.
  const CaseResult c = make_case("flash", {{{{kComm, 0, 10}, {kComp, 0, 2}}},
                                           {{{kComm, 0, 10}, {kComp, 0, 9}}},
                                           {{{kComm, 0, 10}, {kComp, 5, 10}}}});
  EXPECT_DOUBLE_EQ(measured_concurrency(c), 0.5);
}

TEST(Concurrency, UndefinedWithoutCommTimeOrMatchingArrays) {
  // compute_only: no comm task at all.
  EXPECT_TRUE(std::isnan(measured_concurrency(one_rank({{kComp, 0, 3}}, "compute_only"))));
  // Comm tasks of zero length are no busy time either.
  EXPECT_TRUE(std::isnan(measured_concurrency(one_rank({{kComp, 0, 3}, {kComm, 1, 1}}))));
  // Comm tasks without recorded times.
  EXPECT_TRUE(std::isnan(measured_concurrency(one_rank({{kComp, 0, 3}, {kComm, kNaN, kNaN}}))));
  // Task arrays that do not match the case's shape.
  CaseResult broken = one_rank({{kComp, 0, 3}, {kComm, 1, 2}});
  broken.task_end.pop_back();
  EXPECT_TRUE(std::isnan(measured_concurrency(broken)));
  CaseResult empty;
  EXPECT_TRUE(std::isnan(measured_concurrency(empty)));
}

TEST(Concurrency, IterationsWithoutCommTimeAreLeftOut) {
  // Iteration 0 recorded no comm time; iterations 1 and 2 give 1.0 and 0.5, median 0.75 (an
  // iteration counted as 0 would make it 0.5).
  const CaseResult c = make_case("flash", {{{{kComm, kNaN, kNaN}, {kComp, 0, 2}}},
                                           {{{kComm, 0, 2}, {kComp, 0, 2}}},
                                           {{{kComm, 0, 2}, {kComp, 1, 2}}}});
  EXPECT_DOUBLE_EQ(measured_concurrency(c), 0.75);
}

const Summary& row_of(const std::vector<Summary>& rows, const std::string& strategy) {
  for (const Summary& s : rows) {
    if (s.strategy == strategy) return s;
  }
  throw std::runtime_error("no " + strategy);
}

std::vector<CaseResult> sample_cases() {
  std::vector<CaseResult> cases = {
      one_rank({{kComm, 0, 2}, {kComp, 2, 3}, {kComm, 3, 5}}, "baseline"),
      one_rank({{kComp, 0, 1}}, "compute_only"), one_rank({{kComm, 0, 1}}, "comm_only"),
      one_rank({{kComp, 0, 4}, {kComm, 1, 3}, {kComm, 3, 5}}, "flash"),  // 3 of 4 s: 0.75
  };
  for (size_t i = 0; i < cases.size(); ++i) cases[i].id = "000" + std::to_string(i);
  return cases;
}

TEST(Concurrency, SummaryAndReportCarryIt) {
  const std::vector<Summary> rows = summarize(sample_cases());
  EXPECT_EQ(row_of(rows, "baseline").concurrency, 0.0);
  EXPECT_TRUE(std::isnan(row_of(rows, "compute_only").concurrency));
  EXPECT_EQ(row_of(rows, "comm_only").concurrency, 0.0);  // nothing computed beside its comm
  EXPECT_DOUBLE_EQ(row_of(rows, "flash").concurrency, 0.75);

  ResultFile file;
  file.cases = sample_cases();
  std::ostringstream csv, json, md;
  write_report(csv, file, parse_table_format("csv"));
  write_report(json, file, parse_table_format("json"));
  write_report(md, file, parse_table_format("md"));
  // CSV: a fraction, empty where undefined, in the column the header names (the columns before
  // it hold no commas; the doubts after it may, quoted).
  std::istringstream lines(csv.str());
  std::string line;
  std::vector<std::vector<std::string>> body;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) continue;
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string f; std::getline(cells, f, ',');) fields.push_back(f);
    body.push_back(fields);
  }
  ASSERT_EQ(body.size(), 5u) << csv.str();
  const size_t at = static_cast<size_t>(std::find(body[0].begin(), body[0].end(), "concurrency") -
                                        body[0].begin());
  ASSERT_LT(at, body[0].size()) << csv.str();
  EXPECT_EQ(body[1][at], "0");     // baseline
  EXPECT_EQ(body[2][at], "");      // compute_only
  EXPECT_EQ(body[4][at], "0.75");  // flash
  EXPECT_NE(csv.str().find("# concurrency: concurrency is the share"), std::string::npos);
  EXPECT_NE(json.str().find("\"concurrency\": 0.75, "), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"concurrency\": null, "), std::string::npos) << json.str();
  // Markdown: a percentage column before the paired speedup's interval.
  EXPECT_NE(md.str().find("| concurrency (%) | speedup 95% CI |"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find(" | 75.0 | - | "), std::string::npos) << md.str();
}

}  // namespace
}  // namespace fob
