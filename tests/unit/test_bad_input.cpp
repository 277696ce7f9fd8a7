// Bad input to fobench's subcommands, in-process: exit 2, a message naming the culprit, and no
// output file. What needs a launcher (the ranks' memory, the results file, several ranks
// agreeing) is tests/slow/bad_input.sh and hostile_input.sh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/cli_call.h"
#include "fob/backend.h"

namespace fob {
namespace {

const ScratchFiles kFiles = {
    {"unknown_key.yaml", [] { return "workload: mlp\nbatch: 2\nbogus_key: 1\n"; }},
    {"broken.yaml", [] { return "batch: [2\n"; }},
    {"existing.h5", [] { return "precious\n"; }},
};

const std::vector<BadInput> kCases = {
    {"unknown_key", {"-c", "$D/unknown_key.yaml"}, "bogus_key"},
    {"unknown_key_line", {"-c", "$D/unknown_key.yaml"}, "unknown_key.yaml:3"},
    {"unknown_strategy", {"--strategies", "baseline,nope"}, "nope"},
    // Inputs that are not regular files: a directory ran the defaults, a FIFO blocked for ever.
    {"config_dir", {"-c", "$D/a_dir"}, "is a directory"},
    {"config_fifo", {"-c", "$D/a_fifo"}, "is a FIFO"},
    {"report_fifo", {"report", "$D/a_fifo"}, "is a FIFO"},
    {"report_dir", {"report", "$D/a_dir"}, "is a directory"},
    {"sim_machine_fifo", {"sim", "-c", "$SMOKE", "--machine", "$D/a_fifo"}, "is a FIFO"},
    {"sim_config_dir",
     {"sim", "-c", "$D/a_dir", "--machine", "$SRC/bench_configs/machines/cpu_shm.yaml"},
     "is a directory"},
    // Non-finite and out-of-range doubles: a NaN must not turn emulation off, nor an overflowing
    // delay be recorded as emulated without being applied.
    {"gbps_nan", {"--link-gbps", "nan"}, "link_gbps: nan"},
    {"gbps_inf", {"--link-gbps", "inf"}, "link_gbps: inf"},
    {"gbps_tiny", {"--link-gbps", "1e-300"}, "link_gbps: 1e-300"},
    {"latency_huge", {"--link-latency-us", "1e30"}, "link_latency_us: 1e+30"},
    {"ratio_nan", {"--link-ratio", "nan"}, "link_ratio: nan"},
    {"ratio_huge", {"--link-ratio", "1000"}, "link_ratio: 1000"},
    {"ratio_and_gbps", {"--link-ratio", "0.5", "--link-gbps", "2"}, "give one of them"},
    {"ratio_on_cuda", {"--link-ratio", "0.5", "--backend", "cuda"}, "valid backends: cpu"},
    {"timeout_inf", {"--timeout", "inf"}, "timeout: inf"},
    {"timeout_nan", {"--timeout", "nan"}, "timeout: nan"},
    {"strategy_choices", {"--strategies", "nope"}, "flash_direct"},
    {"indivisible_tokens", {"--batch", "1", "--seq", "10"}, "batch*seq", 3},
    {"too_many_slices", {"--strategies", "slicing:1000"}, "slicing:1000"},
    {"unreadable_config", {"-c", "$D/does-not-exist.yaml"}, "cannot read"},
    {"bad_dtype", {"--dtype", "bf16"}, "bf16"},
    {"query_split_without_attn", {"--strategies", "flash_qs"}, "workload attn, ulysses only"},
    {"heads_vs_world",
     {"--workload", "attn", "--hidden", "48", "--heads", "4", "--seq", "6"},
     "world size 3",
     3},
    {"heads_divide_hidden", {"--workload", "attn", "--hidden", "48", "--heads", "5"}, "heads: 5"},
    // Ulysses splits the heads and every sequence across the ranks.
    {"ulysses_heads_vs_world",
     {"--workload", "ulysses", "--hidden", "48", "--heads", "6", "--seq", "8"},
     "heads: 6 does not divide by the world size 4",
     4},
    {"ulysses_seq_vs_world",
     {"--workload", "ulysses", "--hidden", "48", "--heads", "4", "--seq", "6", "--batch", "2"},
     "seq: 6 does not divide by the world size 4",
     4},
    {"heads_not_a_number", {"--workload", "attn", "--heads", "many"}, "heads"},
    {"bad_workload", {"--workload", "attention"}, "valid: ag_gemm, gemm_rs, mlp"},
    {"unknown_option", {"--frobnicate"}, "--frobnicate"},
    {"nccl_on_cpu", {"--backend", "cpu", "--transport", "nccl"}, "transport: 'nccl'"},
    {"ce_on_cpu", {"--backend", "cpu", "--transport", "ce"}, "transport: 'ce' needs the cuda"},
    {"transport_choices", {"--transport", "dma"}, "auto, ce, mpi, nccl"},
    {"graphs_on_cpu", {"--backend", "cpu", "--graphs"}, "graphs"},
    {"comm_sms_on_cpu", {"--backend", "cpu", "--comm-sms", "8"}, "comm_sms"},
    {"math_unknown", {"--math", "fastest"}, "math: 'fastest' is not a math mode; valid: exact"},
    {"math_fast_on_cpu", {"--backend", "cpu", "--math", "fast"}, "math: 'fast' is a cuda"},
    {"broken_yaml", {"-c", "$D/broken.yaml"}, "not valid YAML"},
    // The MoE keys' ranges (test_moe_keys.cpp has the rest of their rules).
    {"experts_zero", {"--experts", "0"}, "experts: 0 is out of range; valid: 1 to 1048576"},
    {"experts_huge", {"--experts", "1048577"}, "experts: 1048577 is out of range; valid: 1 to"},
    {"experts_text", {"--experts", "many"}, "experts: 'many' is not an integer"},
    {"top_k_zero", {"--top-k", "0"}, "top_k: 0 is out of range; valid: 1 to 1048576"},
    {"top_k_past_default_experts",
     {"--top-k", "9"},
     "top_k: 9 is more than the 8 experts; valid: 1 to 8"},
    {"top_k_past_experts",
     {"--experts", "4", "--top-k", "5"},
     "top_k: 5 is more than the 4 experts; valid: 1 to 4"},
    {"expert_ffn_zero", {"--expert-ffn", "0"}, "expert_ffn: 0 is out of range; valid: 1 to"},
    {"expert_ffn_past_int32",
     {"--expert-ffn", "2147483648"},
     "expert_ffn: 2147483648 is out of range; valid: 1 to 2147483647"},
    {"skew_negative", {"--moe-skew", "-0.5"}, "moe_skew: -0.5 is out of range; valid: 0"},
    {"skew_past_4", {"--moe-skew", "4.5"}, "moe_skew: 4.5 is out of range; valid: 0"},
    {"skew_nan", {"--moe-skew", "nan"}, "moe_skew: nan is out of range"},
    {"skew_inf", {"--moe-skew", "inf"}, "moe_skew: inf is out of range"},
    {"capacity_below_tenth",
     {"--capacity-factor", "0.05"},
     "capacity_factor: 0.05 is out of range; valid: 0 (no capacity limit), or 0.1 to 64"},
    {"capacity_past_64", {"--capacity-factor", "65"}, "capacity_factor: 65 is out of range"},
    {"capacity_negative", {"--capacity-factor", "-1"}, "capacity_factor: -1 is out of range"},
    {"capacity_nan", {"--capacity-factor", "nan"}, "capacity_factor: nan is out of range"},
    {"seed_zero", {"--moe-seed", "0"}, "moe_seed: 0 is out of range; valid: 1 to"},
    {"seed_negative", {"--moe-seed", "-3"}, "moe_seed: -3 is out of range"},
    // smoke.yaml's mlp has no experts: a key that is valid in itself is still refused for it.
    {"experts_on_mlp", {"--experts", "16"}, "experts: 16 applies to workloads with experts only"},
    {"skew_on_mlp", {"--moe-skew", "1"}, "moe_skew: 1 applies to workloads with experts only"},
    // report: not a fobench file, a missing file.
    {"report_not_hdf5", {"report", "$D/existing.h5"}, "error"},
    {"report_missing", {"report", "$D/missing.h5"}, "error"},
};

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, IsExitTwoNamingTheCulpritWithNoOutputFile) {
  expect_bad_input(GetParam(), kFiles);
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// Only meaningful where no GPU is visible; on a GPU machine --backend cuda is valid.
TEST(BadInput, CudaWithoutADeviceIsRefused) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible";
  expect_bad_input({"cuda_without_device", {"--backend", "cuda"}, "backend: 'cuda'"}, kFiles);
}

// The formats are named whichever check comes first, the format's or the file's.
TEST(BadInput, ReportFormatXmlListsTheFormats) {
  const CliOutcome got = expect_bad_input(
      {"report_format", {"report", "$D/existing.h5", "--format", "xml"}, "error"}, kFiles);
  EXPECT_TRUE(contains(got.err, "md, csv, json") || contains(got.err, "md|csv|json")) << got.err;
}

}  // namespace
}  // namespace fob
