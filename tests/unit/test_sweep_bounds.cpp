// The bounds on what one run takes (README, Configs: Bounds): a sweep is counted before it is
// made, a config's lists before yaml-cpp loads them, --iters and the bytes its timings cost in
// 64-bit arithmetic, and a value quoted in a message is cut short.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/input_error.h"
#include "../common/yaml_list.h"
#include "core/gather.h"
#include "fob/cases.h"
#include "fob/config.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {
namespace {

// Strategies baseline and flash with the two reference modes: four cases per point.
Config four_per_point() {
  EXPECT_EQ(reference_strategies().size(), 2u);
  Config c;
  c.strategies = {"baseline", "flash"};
  return c;
}

TEST(SweepBounds, AMillionPointsAreRefusedByTheirCountNamingKeysAndLengths) {
  Config c;
  apply_yaml(c, yaml_list("batch", 100) + yaml_list("seq", 100) + yaml_list("hidden", 100),
             "big.yaml");
  const uint64_t per_point = reference_strategies().size() + c.strategies.size();
  EXPECT_EQ(sweep_case_count(c), 1000000u * per_point);
  const std::string msg = input_error([&] { expand_sweep(c); });
  EXPECT_TRUE(contains(msg, "batch (100 values) x seq (100 values) x hidden (100 values)")) << msg;
  EXPECT_TRUE(contains(msg, "= " + std::to_string(1000000u * per_point) + " cases")) << msg;
  EXPECT_TRUE(contains(msg, "more than the 100000 one run takes; split the sweep")) << msg;
}

TEST(SweepBounds, TheEdgeIsTakenAndOneStepPastItIsNot) {
  Config c = four_per_point();
  apply_yaml(c, yaml_list("batch", 100) + yaml_list("seq", 250), "edge.yaml");
  EXPECT_EQ(sweep_case_count(c), kMaxSweepCases);
  EXPECT_EQ(input_error([&] { check_sweep_size(c); }), "<no exception>");
  c.sweep["seq"].push_back("251");
  EXPECT_EQ(sweep_case_count(c), 100400u);
  EXPECT_TRUE(contains(input_error([&] { check_sweep_size(c); }), "= 100400 cases"));
  // `cases:` entries multiply too.
  Config irregular = four_per_point();
  irregular.sweep["batch"] = std::vector<std::string>(25000, "1");
  irregular.cases = {{{"seq", "8"}}};
  EXPECT_EQ(input_error([&] { check_sweep_size(irregular); }), "<no exception>");
  irregular.cases.push_back({{"seq", "16"}});
  const std::string msg = input_error([&] { check_sweep_size(irregular); });
  EXPECT_TRUE(contains(msg, "batch (25000 values) x cases (2) x strategies (4")) << msg;
}

TEST(SweepBounds, ACountPastSixtyFourBitsSaturatesInsteadOfWrapping) {
  Config c;
  // 100000^4 x 7 strategies is past 2^64; wrapped, it could land under the bound.
  for (const char* key : {"batch", "seq", "hidden", "ffn"}) {
    c.sweep[key] = std::vector<std::string>(100000, "1");
  }
  EXPECT_EQ(sweep_case_count(c), UINT64_MAX);
  EXPECT_TRUE(contains(input_error([&] { expand_sweep(c); }), "more than 18446744073709551615"));
}

TEST(SweepBounds, TenThousandValuesExpandWithoutTheirLists) {
  Config c = four_per_point();
  apply_yaml(c, yaml_list("seq", 10000), "long.yaml");
  const std::vector<Config> points = expand_sweep(c);
  ASSERT_EQ(points.size(), 10000u);
  EXPECT_EQ(points[9999].shape.seq, 10000);
  for (const Config& p : points) {
    ASSERT_TRUE(p.sweep.empty());
    ASSERT_TRUE(p.cases.empty());
  }
}

TEST(SweepBounds, AbsurdListsAreRefusedWhileParsing) {
  Config c;
  EXPECT_EQ(input_error([&] { apply_yaml(c, yaml_list("seq", 100000), "ok.yaml"); }),
            "<no exception>");
  std::string msg = input_error([&] { apply_yaml(c, yaml_list("seq", 100001), "long.yaml"); });
  EXPECT_TRUE(contains(msg, "long.yaml:1: seq: a list of more than 100000 values")) << msg;
  // Many values in all, none in a long list: every key unknown, refused before it is loaded.
  std::string many;
  for (int i = 0; i < 200001; ++i) many.append("k").append(std::to_string(i)).append(": 0\n");
  msg = input_error([&] { apply_yaml(c, many, "many.yaml"); });
  EXPECT_TRUE(contains(msg, "many.yaml:200000: the config holds more than 400000 values")) << msg;
  msg = input_error([&] { apply_yaml(c, std::string(kMaxConfigBytes + 1, ' '), "huge.yaml"); });
  EXPECT_TRUE(contains(msg, "huge.yaml: 67108865 bytes, more than the 67108864")) << msg;
}

TEST(SweepBounds, ItersHaveABound) {
  Config c;
  c.iters = kMaxIters;
  EXPECT_EQ(input_error([&] { validate_config(c); }), "<no exception>");
  c.iters = kMaxIters + 1;
  const std::string msg = input_error([&] { validate_config(c); });
  EXPECT_TRUE(contains(msg, "iters: 1000001 is more than 1000000")) << msg;
  EXPECT_TRUE(contains(msg, "--iters")) << msg;
}

TEST(SweepBounds, TimingBytesAreCountedIn64Bits) {
  // 1M iterations of 4096 ranks with 64 tasks: 2 x 1e6 x 4096 x (8 + 32 + 64 x 16) bytes, which
  // an int would have wrapped.
  const int64_t bytes = timing_record_bytes(1000000, 4096, 64);
  EXPECT_EQ(bytes, int64_t{2} * 1000000 * 4096 * (8 + 32 + 64 * 16));
  EXPECT_GT(bytes, INT_MAX);
  EXPECT_EQ(timing_record_bytes(kMaxIters, INT_MAX, INT_MAX), INT64_MAX);
  const std::vector<std::vector<int64_t>> groups = {{10, 10}, {64}};
  EXPECT_EQ(input_error([&] { check_timing_memory(groups, kMaxIters, 4096, -1); }),
            "<no exception>");
  const std::string msg =
      input_error([&] { check_timing_memory(groups, kMaxIters, 4096, int64_t{1} << 40); });
  EXPECT_TRUE(contains(msg, "timings of 1000000 iterations (-n/--iters) on 4096 rank(s)")) << msg;
  EXPECT_EQ(input_error([&] { check_timing_memory(groups, 20, 4, int64_t{1} << 40); }),
            "<no exception>");
}

TEST(SweepBounds, GatherRoundsStayWithinIntCounts) {
  // Past 2 GiB on one rank and in total: each round's counts and displacements are ints.
  const std::vector<int64_t> counts = {int64_t{3} << 30, 1, 0, int64_t{5} << 30};
  const int64_t piece = gather_piece_bytes(4);
  EXPECT_LE(piece * 4, INT_MAX);
  std::vector<int64_t> got(counts.size(), 0);
  for (int64_t offset = 0; offset < counts.back(); offset += piece) {
    const GatherRound round = gather_round(counts, offset, piece);
    ASSERT_LE(round.total, INT_MAX);
    int64_t at = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      ASSERT_GE(round.counts[r], 0);
      ASSERT_EQ(round.displs[r], at);
      at += round.counts[r];
      got[r] += round.counts[r];
    }
  }
  EXPECT_EQ(got, counts);
  EXPECT_GE(gather_piece_bytes(INT_MAX), 1);
}

TEST(SweepBounds, HugeValuesAreQuotedShort) {
  const std::string a80(80, 'a');
  EXPECT_EQ(quote_value(a80), std::string("'").append(a80).append("'"));
  EXPECT_EQ(quote_value(a80 + "a"), std::string("'").append(a80).append("...' (81 bytes)"));
  // Cut before a character, not through it: 'a' then two-byte characters puts byte 80 inside one.
  std::string accents = "a";
  for (int i = 0; i < 50; ++i) accents += "\xc3\xa9";
  EXPECT_EQ(quote_value(accents).substr(0, 81),
            std::string("'").append(accents, 0, 79).append("."));
  Config c;
  const std::string name(1 << 20, 'a');
  std::string msg = input_error([&] { apply_yaml(c, "strategies: [" + name + "]\n", "s.yaml"); });
  EXPECT_LT(msg.size(), 400u) << msg.substr(0, 400);
  EXPECT_TRUE(contains(msg, "(1048576 bytes) is not a strategy")) << msg.substr(0, 400);
  msg = input_error([&] { apply_yaml(c, name + ": 1\n", "s.yaml"); });
  EXPECT_LT(msg.size(), 600u) << msg.substr(0, 600);
  for (const std::string& text : {"workload: " + name, "dtype: " + name, "batch: " + name}) {
    msg = input_error([&] { apply_yaml(c, text + "\n", "s.yaml"); });
    EXPECT_LT(msg.size(), 400u) << msg.substr(0, 400);
    EXPECT_TRUE(contains(msg, "(1048576 bytes)")) << msg.substr(0, 400);
  }
}

}  // namespace
}  // namespace fob
