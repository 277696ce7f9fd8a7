// Rows that say how far they can be trusted (trust.h): dispersion on every row, and the reasons
// a figure cannot be trusted written into the row instead of a percentage out of range.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/calibrate.h"
#include "fob/compare.h"
#include "fob/compare_report.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/results.h"
#include "fob/trust.h"

namespace fob {
namespace {

// An mlp case of one shape whose slowest rank took `steps` (seconds), one per iteration.
CaseResult measured(const std::string& id, const std::string& strategy,
                    const std::vector<double>& steps, int world = 2) {
  CaseResult c = case_result({.id = id,
                              .workload = "mlp",
                              .strategy = strategy,
                              .world = world,
                              .iters = static_cast<int32_t>(steps.size()),
                              .verified = 1});
  for (double s : steps) {
    for (int r = 0; r < world; ++r) c.step_seconds.push_back(r == world - 1 ? s : 0.9 * s);
  }
  return c;
}

std::vector<double> around(double center, double spread, int n = 9) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * (1 + spread * (i - n / 2) / (n / 2)));
  return v;
}

const Summary& row(const std::vector<Summary>& rows, const std::string& strategy) {
  for (const Summary& s : rows) {
    if (s.strategy == strategy) return s;
  }
  throw std::logic_error("no row " + strategy);
}

bool says(const Summary& s, const std::string& reason) {
  return s.doubts.find(reason) != std::string::npos;
}

// The paper sweep on a busy machine: compute_only varied from 44 to 201 ms, and decompose's
// median came out below it.
std::vector<CaseResult> noisy_run() {
  return {measured("0", "compute_only", {44e-3, 60e-3, 111.5e-3, 150e-3, 201e-3}),
          measured("1", "comm_only", around(50e-3, 0.02, 5)),
          measured("2", "baseline", around(170e-3, 0.02, 5)),
          measured("3", "decompose", around(94.9e-3, 0.02, 5))};
}

TEST(Trust, ANoisyComputeReferenceBlanksWhatItWouldDistort) {
  const std::vector<Summary> rows = summarize(noisy_run());
  const Summary& decompose = row(rows, "decompose");
  EXPECT_LT(decompose.exposed_comm, 0);
  EXPECT_TRUE(std::isnan(decompose.comm_reduction)) << decompose.comm_reduction;
  EXPECT_TRUE(std::isnan(decompose.hidden_frac)) << decompose.hidden_frac;
  EXPECT_TRUE(says(decompose, "T_comp noisy (cv ")) << decompose.doubts;
  EXPECT_TRUE(says(decompose, "T below T_comp")) << decompose.doubts;
  EXPECT_TRUE(says(row(rows, "compute_only"), "noisy: cv ")) << row(rows, "compute_only").doubts;
  EXPECT_TRUE(row(rows, "comm_only").doubts.empty()) << row(rows, "comm_only").doubts;
  const std::string warning = noise_warning(rows);
  EXPECT_NE(warning.find("compute_only varied with cv"), std::string::npos) << warning;
  EXPECT_NE(warning.find("--rounds"), std::string::npos) << warning;
}

TEST(Trust, AQuietRunIsBeyondDoubt) {
  const std::vector<Summary> rows = summarize({measured("0", "compute_only", around(100e-3, 0.02)),
                                               measured("1", "comm_only", around(40e-3, 0.02)),
                                               measured("2", "baseline", around(135e-3, 0.02)),
                                               measured("3", "flash", around(108e-3, 0.02))});
  for (const Summary& s : rows) EXPECT_TRUE(s.doubts.empty()) << s.strategy << ": " << s.doubts;
  EXPECT_NEAR(row(rows, "flash").hidden_frac, 1 - 8.0 / 40.0, 1e-9);
  EXPECT_EQ(noise_warning(rows), "");
  // The median's interval holds the median and lies within the sample.
  const Summary& flash = row(rows, "flash");
  EXPECT_LE(flash.t_ci_low, flash.t_median);
  EXPECT_GE(flash.t_ci_high, flash.t_median);
  EXPECT_GE(flash.t_ci_low, flash.t_min);
}

TEST(Trust, BelowTheBoundBeyondItsIntervalIsSaid) {
  const std::vector<Summary> rows = summarize({measured("0", "compute_only", around(100e-3, 0.01)),
                                               measured("1", "comm_only", around(40e-3, 0.01)),
                                               measured("2", "baseline", around(139e-3, 0.01)),
                                               measured("3", "flash", around(90e-3, 0.01))});
  EXPECT_TRUE(says(row(rows, "flash"), "T below T_lb beyond its interval"))
      << row(rows, "flash").doubts;
  EXPECT_TRUE(says(row(rows, "flash"), "speedup above the ideal"));
}

TEST(Trust, OneRankHasNoCommunicationToHide) {
  const std::vector<Summary> rows =
      summarize({measured("0", "compute_only", around(100e-3, 0.01), 1),
                 measured("1", "comm_only", around(1e-6, 0.01), 1),
                 measured("2", "baseline", around(110e-3, 0.01), 1),
                 measured("3", "flash", around(105e-3, 0.01), 1)});
  const Summary& flash = row(rows, "flash");
  EXPECT_TRUE(std::isnan(flash.comm_reduction));
  EXPECT_TRUE(std::isnan(flash.hidden_frac));
  EXPECT_TRUE(says(flash, "world 1: no communication")) << flash.doubts;
}

TEST(Trust, MedianIntervalIsTheOrderStatistics) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  double low = 0, high = 0;
  median_interval(v, &low, &high);
  EXPECT_EQ(low, 40);   // floor(50 - 9.8)
  EXPECT_EQ(high, 61);  // ceil(51 + 9.8)
  median_interval({3.0, 5.0}, &low, &high);
  EXPECT_EQ(low, 4.0);
  EXPECT_EQ(high, 4.0);
}

TEST(Trust, EveryFormatCarriesDispersionAndDoubts) {
  ResultFile file;
  file.system.backend = "cpu";
  file.system.world_size = 2;
  file.cases = noisy_run();
  for (TableFormat format : all_table_formats()) {
    std::ostringstream out;
    write_report(out, file, format);
    EXPECT_NE(out.str().find("T below T"), std::string::npos) << out.str();  // LaTeX: T\_comp
    EXPECT_EQ(out.str().find("162"), std::string::npos);
  }
  std::ostringstream md;
  write_report(md, file, parse_table_format("md"));
  EXPECT_NE(md.str().find("cv (%)"), std::string::npos) << md.str();
  std::ostringstream csv;
  write_report(csv, file, parse_table_format("csv"));
  EXPECT_NE(csv.str().find("t_ci_low_ms,t_ci_high_ms,"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find(",doubts\n"), std::string::npos) << csv.str();
}

TEST(Trust, CalibrateSaysWhatMakesItsFitDoubtful) {
  ResultFile quiet;
  quiet.cases = {measured("0", "compute_only", around(100e-3, 0.02)),
                 measured("1", "comm_only", around(40e-3, 0.02))};
  EXPECT_TRUE(calibration_warnings({quiet}).empty());
  ResultFile noisy;
  noisy.cases = noisy_run();
  noisy.system.notes = "4 ranks shared 2 cores on node1: compute tasks took turns on the cores";
  ResultFile wider = quiet;
  for (CaseResult& c : wider.cases) c.world = 4;
  const std::vector<std::string> w = calibration_warnings({noisy, wider});
  std::string all;
  for (const std::string& line : w) all += line + "\n";
  EXPECT_NE(all.find("4 ranks shared 2 cores"), std::string::npos) << all;
  EXPECT_NE(all.find("compute_only b2 s8 h4 f16 heads0 fp32 N=2 varied with cv"), std::string::npos)
      << all;
  EXPECT_NE(all.find("the files mix world sizes 2, 4"), std::string::npos) << all;
}

TEST(Trust, ComparePricesAPredictionAgainstTheMeasurement) {
  ResultFile measured_file;
  measured_file.cases = {measured("0", "baseline", around(10e-3, 0.01)),
                         measured("1", "flash", around(8e-3, 0.01))};
  ResultFile simulated;
  simulated.system.simulated = "machine 'here'";
  simulated.cases = {measured("0", "baseline", {11e-3}), measured("1", "flash", {7.6e-3}),
                     measured("2", "decompose", {9e-3})};
  ASSERT_TRUE(is_prediction_pair(measured_file, simulated));
  EXPECT_FALSE(is_prediction_pair(measured_file, measured_file));
  const PredictionCheck check = compare_predictions(measured_file, simulated);
  ASSERT_EQ(check.cases.size(), 2u);
  EXPECT_NEAR(check.cases[0].error, 0.10, 1e-9);
  EXPECT_NEAR(check.cases[1].error, -0.05, 1e-9);
  EXPECT_EQ(check.only_predicted.size(), 1u);
  const CompareSide m{"MEASURED", "m.h5", measured_file}, p{"SIMULATED", "s.h5", simulated};
  std::ostringstream md;
  const TableDocument doc = prediction_document(check, m, p);
  write_table(md, doc, parse_table_format("md"));
  EXPECT_NE(md.str().find("machine 'here'"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("| +10.0 |"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("Mean |error| 7.5%, largest 10.0%"), std::string::npos) << md.str();
}

}  // namespace
}  // namespace fob
