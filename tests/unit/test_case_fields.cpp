// The case-field registry (fob/case_fields.h) and what reads it: every CaseKey field is in it,
// a moe file's reports, comparisons and pictures name the MoE fields (and only a moe file's),
// and an uneven all-to-all's bandwidth is priced by its busiest rank.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "../common/input_error.h"
#include "fob/case_fields.h"
#include "fob/compare.h"
#include "fob/compare_report.h"
#include "fob/metrics.h"
#include "fob/pictures.h"
#include "fob/plan.h"
#include "fob/report.h"
#include "fob/table.h"
#include "fob/types.h"
#include "pictures/pictures_common.h"
#include "report/report_columns.h"

namespace fob {
namespace {

constexpr int kWorld = 2;

// A case of `workload` whose slowest rank took `step` seconds in each of three rounds; a moe
// case with its MoE fields set (skew `skew`), any other with zeros, as files record them.
CaseResult make_case(const std::string& id, const std::string& workload,
                     const std::string& strategy, double skew, double step) {
  const bool moe = workload == "moe";
  CaseResult c = case_result({.id = id,
                              .workload = workload,
                              .strategy = strategy,
                              .seq = 64,
                              .hidden = 32,
                              .ffn = 64,
                              .experts = moe ? 8 : 0,
                              .top_k = moe ? 2 : 0,
                              .expert_ffn = moe ? 48 : 0,
                              .moe_skew = moe ? skew : 0,
                              .capacity_factor = moe ? 1.25 : 0,
                              .moe_seed = moe ? 1 : 0,
                              .world = kWorld,
                              .iters = 3});
  c.round_iters.assign(3, 1);
  for (int i = 0; i < 3; ++i) {
    c.step_seconds.push_back(0.9 * step);
    c.step_seconds.push_back(step);
  }
  return c;
}

// baseline and flash of one shape per skew (flash at 0.8 of baseline's time).
ResultFile skew_file(const std::string& workload, const std::vector<double>& skews) {
  ResultFile f;
  f.system.world_size = kWorld;
  int id = 0;
  for (const double skew : skews) {
    for (const char* strategy : {"baseline", "flash"}) {
      const double t = (std::string(strategy) == "flash" ? 8e-3 : 10e-3) * (1 + skew);
      f.cases.push_back(make_case("000" + std::to_string(id++), workload, strategy, skew, t));
    }
  }
  return f;
}

std::string report_text(const ResultFile& f, const std::vector<std::string>& group_by = {}) {
  std::ostringstream out;
  write_report(out, f, parse_table_format("md"), group_by);
  return out.str();
}

TEST(CaseFields, TheRegistryHoldsEveryKeyField) {
  // Every field by position: one added to CaseKey fails to compile (-Wextra) here, and then
  // this test until the registry has it.
  const CaseKey k{"moe", "flash:2", 2, 64, 32, 96, 4, 8, 2, 48, 0.5, 1.25, 7, "bf16", 4};
  const std::map<std::string, std::string> expected = {
      {"workload", "moe"},  {"strategy", "flash:2"}, {"batch", "2"},
      {"seq", "64"},        {"hidden", "32"},        {"ffn", "96"},
      {"heads", "4"},       {"experts", "8"},        {"top_k", "2"},
      {"expert_ffn", "48"}, {"moe_skew", "0.5"},     {"capacity_factor", "1.25"},
      {"moe_seed", "7"},    {"dtype", "bf16"},       {"world", "4"}};
  std::map<std::string, std::string> got;
  for (const CaseField& f : case_fields()) got[f.name] = f.text(k);
  EXPECT_EQ(got, expected);
  EXPECT_DOUBLE_EQ(find_case_field("moe_skew")->number(k), 0.5);
  EXPECT_EQ(find_case_field("nope"), nullptr);
  // The report's columns for scripts carry every field under its name.
  for (const CaseField& f : case_fields()) {
    bool found = false;
    for (const ReportColumn& c : report_columns()) found |= c.column.name == f.name;
    EXPECT_TRUE(found) << f.name;
  }
}

TEST(CaseFields, TheMoeFieldsApplyOnlyWithExperts) {
  const CaseKey moe = make_case("0", "moe", "flash", 0.5, 1e-3);
  const CaseKey mlp = make_case("0", "mlp", "flash", 0, 1e-3);
  for (const char* name :
       {"experts", "top_k", "expert_ffn", "moe_skew", "capacity_factor", "moe_seed"}) {
    const CaseField* f = find_case_field(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->applies(moe) && f->listed(moe)) << name;
    EXPECT_FALSE(f->applies(mlp) || f->listed(mlp)) << name;
  }
  // Heads shapes attention only, but every workload records a count.
  EXPECT_FALSE(find_case_field("heads")->applies(mlp));
  EXPECT_TRUE(find_case_field("heads")->listed(mlp));
  EXPECT_EQ(pictures::shape_text(moe),
            "moe batch 2 × seq 64, hidden 32, ffn 64, experts 8, top_k 2, expert_ffn 48, "
            "moe_skew 0.5, capacity_factor 1.25, moe_seed 1, fp32, world 2");
  EXPECT_EQ(pictures::shape_text(mlp), "mlp batch 2 × seq 64, hidden 32, ffn 64, fp32, world 2");
}

TEST(CaseFields, ReportHeadingsNameTheMoeFields) {
  const std::string moe = report_text(skew_file("moe", {0, 0.5}));
  EXPECT_NE(moe.find("moe b=2 s=64 d=32 f=64 experts=8 top_k=2 expert_ffn=48 moe_skew=0 "
                     "capacity_factor=1.25 moe_seed=1 fp32 N=2"),
            std::string::npos)
      << moe;
  EXPECT_NE(moe.find("moe_skew=0.5 capacity_factor"), std::string::npos) << moe;
  const std::string mlp = report_text(skew_file("mlp", {0}));
  EXPECT_NE(mlp.find("mlp b=2 s=64 d=32 f=64 fp32 N=2"), std::string::npos) << mlp;
  EXPECT_EQ(mlp.find("experts"), std::string::npos) << mlp;
}

TEST(CaseFields, ReportGroupsByMoeSkew) {
  const std::string text = report_text(skew_file("moe", {0, 0.5}), parse_group_by("moe_skew"));
  EXPECT_NE(text.find("## moe_skew=0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("## moe_skew=0.5\n"), std::string::npos) << text;
  // Grouped by strategy, the rows of a group are told apart by the skew.
  const std::string by_strategy =
      report_text(skew_file("moe", {0, 0.5}), parse_group_by("strategy"));
  EXPECT_NE(by_strategy.find("moe_skew"), std::string::npos) << by_strategy;
  const std::string what = input_error([] { parse_group_by("seq,skew"); });
  for (const char* part : {"--group-by", "'skew'", "moe_skew", "capacity_factor", "strategy"}) {
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(CaseFields, CompareTellsMoeCasesApartAndListsTheirFields) {
  const ResultFile base = skew_file("moe", {0, 0.5});
  const Comparison c = compare_results(base, base, CompareMetric::t, 5);
  ASSERT_EQ(c.changes.size(), 4u);  // two strategies at two skews, none merged
  std::ostringstream out;
  write_table(
      out,
      compare_document(c, {"BASE", "b.h5", base}, {"NEW", "n.h5", base}, parse_table_format("csv")),
      parse_table_format("csv"));
  const std::string csv = out.str();
  EXPECT_NE(csv.find("heads,experts,top_k,expert_ffn,moe_skew,capacity_factor,moe_seed,dtype"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",8,2,48,0.5,1.25,1,fp32,"), std::string::npos) << csv;

  const ResultFile mlp = skew_file("mlp", {0});
  std::ostringstream plain;
  write_table(
      plain,
      compare_document(compare_results(mlp, mlp, CompareMetric::t, 5), {"BASE", "b.h5", mlp},
                       {"NEW", "n.h5", mlp}, parse_table_format("csv")),
      parse_table_format("csv"));
  EXPECT_EQ(plain.str().find("experts"), std::string::npos) << plain.str();
}

TEST(CaseFields, SpeedupDrawsAlongMoeSkew) {
  const ResultFile f = skew_file("moe", {0, 0.5, 1});
  std::ostringstream out;
  write_speedup_svg(out, f, "moe_skew");
  const std::string svg = out.str();
  EXPECT_NE(svg.find(">moe_skew</text>"), std::string::npos);
  // The picture names what every case shares, the MoE fields among them.
  EXPECT_NE(svg.find("experts 8, top_k 2"), std::string::npos);
  std::ostringstream chosen;
  write_speedup_svg(chosen, f);  // the one field that varies
  EXPECT_NE(chosen.str().find(">moe_skew</text>"), std::string::npos);
  const std::string what = input_error([&] {
    std::ostringstream o;
    write_speedup_svg(o, f, "experts");
  });
  EXPECT_NE(what.find("'experts'"), std::string::npos) << what;
  EXPECT_NE(what.find("moe_skew"), std::string::npos) << what;
  const std::string unknown = input_error([&] {
    std::ostringstream o;
    write_speedup_svg(o, f, "skew");
  });
  EXPECT_NE(unknown.find("valid choices: seq, world, batch"), std::string::npos) << unknown;
}

// A comm_only case whose ranks send `rank0` and `rank1` bytes over the step.
CaseResult comm_case(const std::string& workload, int64_t rank0, int64_t rank1) {
  CaseResult c = make_case("0000", workload, "comm_only", 0, 4e-3);
  c.max_tasks = 1;
  for (int r = 0; r < kWorld; ++r) {
    c.tasks.push_back(TaskRecord{r, 0, static_cast<int8_t>(StreamId::comm),
                                 static_cast<int8_t>(TaskKind::collective), -1,
                                 r == 0 ? rank0 : rank1, 0, "all-to-all"});
  }
  c.task_start.assign(3 * kWorld, 0);
  c.task_end.assign(3 * kWorld, 1e-3);
  return c;
}

TEST(CaseFields, UnevenAllToAllIsPricedByItsBusiestRank) {
  const CaseResult moe = comm_case("moe", 1000, 3000);
  EXPECT_EQ(step_sent_bytes(moe), 3000);
  // busbw = the busiest rank's bytes over T (N = 2: S = 2 sent, busbw = S / 2 / T).
  EXPECT_NEAR(case_busbw(moe, 4e-3), 3000 / 4e-3 / 1e9, 1e-12);
  EXPECT_NEAR(summarize({moe})[0].algbw, 6000 / 4e-3 / 1e9, 1e-12);
  // An even collective's figures stay rank 0's, whatever another rank recorded.
  const CaseResult mlp = comm_case("mlp", 1000, 3000);
  EXPECT_EQ(step_sent_bytes(mlp), 1000);
  EXPECT_NEAR(case_busbw(mlp, 4e-3), 1000 / 4e-3 / 1e9, 1e-12);
}

}  // namespace
}  // namespace fob
