// Sizes that overflow, integers that wrap, repeated keys, sweeps past their bound, a BLAS thread
// count that would not be applied: each is exit 2 within the process, naming the culprit, with no
// output file and nothing allocated. What needs a launcher (host memory, output paths, compare
// and calibrate over measured files) is tests/slow/hostile_input.sh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/cli_call.h"
#include "../common/yaml_list.h"

namespace fob {
namespace {

// An mlp config on the cpu backend with `lines`.
std::string sweep_yaml(const std::string& lines) {
  return "workload: mlp\nbackend: cpu\n" + lines;
}

const ScratchFiles kFiles = {
    {"seed.yaml", [] { return "seed: -1\n"; }},
    {"dup.yaml", [] { return "workload: mlp\nbatch: 2\nseq: 64\nbatch: 4\n"; }},
    {"dup_case.yaml", [] { return "cases:\n  - {batch: 2, batch: 4}\n"; }},
    {"million.yaml",
     [] {
       return sweep_yaml(yaml_list("batch", 100) + yaml_list("seq", 100) +
                         yaml_list("hidden", 100));
     }},
    // 10000 values (40 KB) x 4 strategies is within the bound: expanded in full, then refused
    // because flash_qs applies to attention only, which proves the expansion ran out of nothing.
    {"ten_thousand.yaml",
     [] { return sweep_yaml(yaml_list("seq", 10000) + "strategies: [baseline, flash_qs]\n"); }},
    // The edge: 100 x 250 points x 4 strategies = 100000 cases are taken, 100 x 251 are not.
    {"edge.yaml",
     [] {
       return sweep_yaml(yaml_list("batch", 100) + yaml_list("seq", 250) +
                         "strategies: [baseline, flash_qs]\n");
     }},
    {"past_edge.yaml",
     [] {
       return sweep_yaml(yaml_list("batch", 100) + yaml_list("seq", 251) +
                         "strategies: [baseline, flash_qs]\n");
     }},
    // A 20 MB list is refused while it is parsed, before yaml-cpp makes a node of each value.
    {"twenty_mb.yaml", [] { return sweep_yaml(yaml_list("seq", 3000000)); }},
    {"long_name.yaml", [] { return "strategies: [" + std::string(5000000, 'a') + "]\n"; }},
};

const std::vector<BadInput> kCases = {
    // Overflow: each used to abort (bad_alloc), be OOM-killed or wrap to a negative row count.
    {"batch_2p32", {"--batch", "4294967297"}, "batch: 4294967297 is too large"},
    {"batch_2p32_dry", {"--batch", "4294967297", "--dry-run"}, "batch: 4294967297 is too large"},
    {"seq_2p32", {"--seq", "4294967296"}, "seq: 4294967296 is too large"},
    {"batch_20_digits",
     {"--batch", "99999999999999999999"},
     "batch: '99999999999999999999' is not an integer"},
    {"batch_hex", {"--batch", "0x10"}, "batch: '0x10' is not an integer"},
    {"product_overflow",
     {"--batch", "2147483647", "--seq", "2147483647", "--dry-run"},
     "batch x seq x hidden"},
    {"attention_scores",
     {"--workload", "attn", "--batch", "1", "--seq", "2000000000", "--hidden", "64", "--heads", "1",
      "--dry-run"},
     "heads x seq x seq (attention scores)"},
    // One rule for --seed on the command line and in YAML.
    {"seed_minus_one",
     {"--seed", "-1"},
     "seed: '-1' is not an integer from 0 to 18446744073709551615"},
    {"seed_2p64",
     {"--seed", "18446744073709551616"},
     "seed: '18446744073709551616' is not an integer"},
    {"seed_yaml", {"-c", "$D/seed.yaml"}, "seed.yaml:1: seed: '-1' is not an integer from 0"},
    // A repeated key would silently lose one of its values.
    {"duplicate_key",
     {"-c", "$D/dup.yaml"},
     "dup.yaml:4: 'batch' is given twice (first at line 2)"},
    {"duplicate_case_key", {"-c", "$D/dup_case.yaml"}, "'batch' is given twice"},
    // More BLAS threads than the BLAS runs would be recorded but not applied.
    {"blas_threads", {"--blas-threads", "100000"}, "blas_threads: 100000 but this BLAS runs"},
    // Sweeps are counted before they are made (at most 100000 cases a run): a million points used
    // to be bad_alloc or "out of host memory", a 20 MB list an OOM-killed rank.
    {"sweep_million",
     {"-c", "$D/million.yaml"},
     "sweep: batch (100 values) x seq (100 values) x hidden (100 values) x strategies (7, with the "
     "reference modes) = 7000000 cases, more than the 100000 one run takes"},
    {"sweep_10000_values",
     {"-c", "$D/ten_thousand.yaml"},
     "strategies: 'flash_qs' applies to workload attn"},
    {"sweep_edge", {"-c", "$D/edge.yaml"}, "strategies: 'flash_qs' applies to workload attn"},
    {"sweep_past_edge", {"-c", "$D/past_edge.yaml"}, "= 100400 cases, more than the 100000"},
    {"sweep_20mb_list",
     {"-c", "$D/twenty_mb.yaml"},
     "twenty_mb.yaml:3: seq: a list of more than 100000 values"},
    // --iters has a bound too: rank 0 keeps every iteration's task times.
    {"iters_bound", {"--iters", "1000001"}, "iters: 1000001 is more than 1000000 timed iterations"},
};

class HostileInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(HostileInputTest, IsExitTwoNamingTheCulpritWithNoOutputFile) {
  expect_bad_input(GetParam(), kFiles);
}

INSTANTIATE_TEST_SUITE_P(Cli, HostileInputTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// A 5 MB strategy name is quoted by its first 80 characters and its length, not echoed whole.
TEST(HostileInput, ALongStrategyNameIsQuotedShort) {
  const CliOutcome got = expect_bad_input(
      {"long_strategy_name", {"-c", "$D/long_name.yaml"}, "(5000000 bytes) is not a strategy"},
      kFiles);
  EXPECT_LT(got.err.size(), 1000u);
}

}  // namespace
}  // namespace fob
