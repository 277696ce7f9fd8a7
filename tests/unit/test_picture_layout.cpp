// What every picture's layout relies on: text widths that err wide, wrapping within a width,
// colours that never repeat, the short banner, and choosing a case as the report shows it.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/results.h"
#include "fob/types.h"
#include "pictures/chart_axes.h"
#include "pictures/picture_layout.h"

namespace fob {
namespace {

TEST(PictureLayout, WrappedLinesFitTheirWidthAndKeepEveryWord) {
  const std::string text =
      "machine 'h100_nvlink_ib' (bench_configs/machines/h100_nvlink_ib.yaml); fp32 peak 67 "
      "TFLOP/s, memory 3350 GB/s, 6 GEMM efficiency points; a/very/long/path/without/any/space/"
      "in/it/that/must/be/cut/somewhere/to/fit";
  for (double width : {120.0, 300.0, 900.0}) {
    const std::vector<std::string> lines = pictures::wrap(text, width, 11);
    ASSERT_FALSE(lines.empty());
    std::string joined;
    for (const std::string& line : lines) {
      EXPECT_LE(pictures::text_width(line, 11), width) << line;
      joined += line;
    }
    std::string letters;
    for (char c : text) {
      if (c != ' ') letters += c;
    }
    std::string got;
    for (char c : joined) {
      if (c != ' ') got += c;
    }
    EXPECT_EQ(got, letters);
  }
  // Wider glyphs, wider text; a UTF-8 character counts once.
  EXPECT_GT(pictures::text_width("WWWW", 12), pictures::text_width("iiii", 12));
  EXPECT_EQ(pictures::text_width("×", 12), pictures::text_width("+", 12));
}

TEST(PictureLayout, SeriesColoursNeverRepeatAndAreNeverGrey) {
  std::set<std::string> seen;
  for (size_t i = 0; i < 300; ++i) {
    const std::string c = charts::series_colour(i);
    ASSERT_EQ(c.size(), 7u) << c;
    EXPECT_TRUE(seen.insert(c).second) << "colour " << i << " repeats " << c;
    EXPECT_FALSE(c.substr(1, 2) == c.substr(3, 2) && c.substr(3, 2) == c.substr(5, 2)) << c;
  }
  EXPECT_EQ(seen.count("#555555"), 0u);  // the baseline's
  EXPECT_EQ(seen.count("#888888"), 0u);  // the ideal line's
}

TEST(PictureLayout, BannersAreShortAndTheDetailIsKept) {
  SystemInfo sim;
  sim.simulated =
      "machine 'h200_nvlink_ib' (bench_configs/machines/h200.yaml); " + std::string(900, 'x');
  const pictures::Banner b = pictures::banner(sim);
  EXPECT_EQ(b.line, "SIMULATED with h200_nvlink_ib: predicted, not measured");
  EXPECT_NE(b.detail.find(std::string(900, 'x')), std::string::npos);

  SystemInfo emulated;
  emulated.link_emulation = "emulated: 10 Gbit/s, 5 us latency per transfer (probe: 1.2 ms)";
  EXPECT_EQ(pictures::banner(emulated).line, "EMULATED link: 10 Gbit/s, 5 us latency per transfer");
  EXPECT_NE(pictures::banner(emulated).detail.find("probe: 1.2 ms"), std::string::npos);

  SystemInfo real;
  real.link_emulation = "none";
  EXPECT_TRUE(pictures::banner(real).line.empty());
}

ResultFile three_cases() {
  ResultFile f;
  const char* strategies[] = {"baseline", "slicing:4", "flash"};
  for (int i = 0; i < 3; ++i) {
    // No shape: the choices a message lists are told apart by what the test sets.
    f.cases.push_back(case_result({.id = "000" + std::to_string(i),
                                   .workload = "mlp",
                                   .strategy = strategies[i],
                                   .batch = 0,
                                   .seq = 0,
                                   .hidden = 0,
                                   .ffn = 0,
                                   .world = 0}));
  }
  return f;
}

TEST(SelectCase, ByIdNumberOrStrategy) {
  const ResultFile f = three_cases();
  EXPECT_EQ(select_case(f, "0002", "--case").strategy, "flash");
  EXPECT_EQ(select_case(f, "2", "--case").strategy, "flash");
  EXPECT_EQ(select_case(f, "flash", "--case").id, "0002");
  EXPECT_EQ(select_case(f, "slicing:4", "--case").id, "0001");
  EXPECT_EQ(select_case(f, "slicing", "--case").id, "0001");
}

TEST(SelectCase, NoneOrSeveralIsAnInputErrorNamingTheChoices) {
  ResultFile f = three_cases();
  try {
    select_case(f, "decompose", "--case");
    FAIL() << "an absent strategy was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("0001 (slicing:4)"), std::string::npos) << e.what();
  }
  f.cases.push_back(f.cases[2]);
  f.cases.back().id = "0003";
  f.cases.back().seq = 512;
  try {
    select_case(f, "flash", "--case");
    FAIL() << "an ambiguous strategy was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("matches 2 cases"), std::string::npos) << what;
    EXPECT_NE(what.find("0003 flash mlp batch 0 seq 512"), std::string::npos) << what;
  }
  EXPECT_THROW(select_case(f, "9", "--case"), InputError);
}

}  // namespace
}  // namespace fob
