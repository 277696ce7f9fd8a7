#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "../common/machine_text.h"
#include "fob/machine.h"

namespace fob {
namespace {

const char* const kGood = R"(name: test
source: "unit test"
compute:
  bf16:
    peak_tflops: 100
    memory_gbytes_per_s: 1000
    gemm_efficiency:
      - [512, 512, 512, 0.3]
      - [8192, 8192, 8192, 0.8]
  fp32:
    peak_tflops: 10
    memory_gbytes_per_s: 1000
links:
  - {name: nvlink, latency_us: 2, gbytes_per_s: 400}
  - {name: ib, latency_us: 5, gbytes_per_s: 50}
topology: {ranks_per_node: 8, intra_node: nvlink, inter_node: ib}
contention: 1.25
)";

std::string error_of(const std::string& text) {
  return machine_error_of(text);
}

std::string replaced(const std::string& from, const std::string& to) {
  return replaced_in(kGood, from, to);
}

Task gemm(int64_t m, int64_t n, int64_t k, int batch = 1) {
  return gemm_task(m, n, k, batch);
}

TEST(Machine, ParsesTheFormat) {
  const Machine m = parse_machine(kGood, "m.yaml");
  EXPECT_EQ(m.name, "test");
  EXPECT_EQ(m.source, "unit test");
  ASSERT_EQ(m.compute.count(DType::bf16), 1u);
  EXPECT_DOUBLE_EQ(m.compute.at(DType::bf16).peak_flops, 100e12);
  EXPECT_DOUBLE_EQ(m.compute.at(DType::bf16).memory_bytes_per_s, 1000e9);
  ASSERT_EQ(m.compute.at(DType::bf16).gemm_efficiency.size(), 2u);
  EXPECT_EQ(m.compute.at(DType::bf16).gemm_efficiency[1].k, 8192);
  ASSERT_EQ(m.links.size(), 2u);
  EXPECT_DOUBLE_EQ(m.links[1].latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(m.links[1].bytes_per_s, 50e9);
  EXPECT_EQ(m.ranks_per_node, 8);
  EXPECT_EQ(m.intra_node, "nvlink");
  EXPECT_EQ(m.inter_node, "ib");
  EXPECT_DOUBLE_EQ(m.contention, 1.25);
}

TEST(Machine, UnknownKeyNamesLineAndValidKeys) {
  const std::string e = error_of(replaced("contention: 1.25", "contention: 1.25\nfoo: 3"));
  EXPECT_NE(e.find("m.yaml:18:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'foo'"), std::string::npos) << e;
  EXPECT_NE(e.find("valid keys: name, source"), std::string::npos) << e;

  const std::string nested = error_of(replaced("peak_tflops: 10\n", "peak_tflop: 10\n"));
  EXPECT_NE(nested.find("m.yaml:11:"), std::string::npos) << nested;
  EXPECT_NE(nested.find("compute.fp32"), std::string::npos) << nested;
  EXPECT_NE(nested.find("peak_tflops, memory_gbytes_per_s"), std::string::npos) << nested;
}

TEST(Machine, MissingKey) {
  const std::string e = error_of(replaced("source: \"unit test\"\n", ""));
  EXPECT_NE(e.find("missing key 'source'"), std::string::npos) << e;
}

TEST(Machine, BadValues) {
  std::string e = error_of(replaced("0.3]", "1.5]"));
  EXPECT_NE(e.find("m.yaml:8:"), std::string::npos) << e;
  EXPECT_NE(e.find("gemm_efficiency[0].efficiency: '1.5' must be in (0, 1]"), std::string::npos)
      << e;
  e = error_of(replaced("0.3]", "0]"));
  EXPECT_NE(e.find("'0' must be in (0, 1]"), std::string::npos) << e;
  e = error_of(replaced("peak_tflops: 100", "peak_tflops: 0"));
  EXPECT_NE(e.find("m.yaml:5: compute.bf16.peak_tflops: '0' must be > 0"), std::string::npos) << e;
  e = error_of(replaced("latency_us: 2", "latency_us: -1"));
  EXPECT_NE(e.find("links[0].latency_us: '-1' must be >= 0"), std::string::npos) << e;
  e = error_of(replaced("gbytes_per_s: 50", "gbytes_per_s: fast"));
  EXPECT_NE(e.find("links[1].gbytes_per_s: 'fast' is not a number"), std::string::npos) << e;
  e = error_of(replaced("contention: 1.25", "contention: 0.5"));
  EXPECT_NE(e.find("contention: '0.5' must be >= 1"), std::string::npos) << e;
  e = error_of(replaced("contention: 1.25", "contention: {gemm: 1.1, transfer: 0.9}"));
  EXPECT_NE(e.find("contention.transfer: '0.9' must be >= 1"), std::string::npos) << e;
  e = error_of(replaced("contention: 1.25", "contention: {comm_start_us: -3}"));
  EXPECT_NE(e.find("contention.comm_start_us: '-3' must be >= 0"), std::string::npos) << e;
  e = error_of(replaced("contention: 1.25", "contention: {gemm: 1.1, sms: 8}"));
  EXPECT_NE(e.find("unknown key 'sms' in contention; valid keys: gemm, transfer, comm_start_us"),
            std::string::npos)
      << e;
}

// A bare number is the GEMM factor; the mapping sets any of the three.
TEST(Machine, ContentionForms) {
  const Machine bare = parse_machine(kGood, "m.yaml");
  EXPECT_EQ(bare.contention, 1.25);
  EXPECT_EQ(bare.transfer_contention, 1.0);
  EXPECT_EQ(bare.comm_start_delay_s, 0.0);
  const Machine full = parse_machine(
      replaced("contention: 1.25", "contention: {gemm: 1.1, transfer: 1.5, comm_start_us: 40}"),
      "m.yaml");
  EXPECT_EQ(full.contention, 1.1);
  EXPECT_EQ(full.transfer_contention, 1.5);
  EXPECT_NEAR(full.comm_start_delay_s, 40e-6, 1e-18);
  const MachineCost cost(full);
  EXPECT_EQ(cost.compute_slowdown_while_transferring(), 1.1);
  EXPECT_EQ(cost.transfer_slowdown_while_computing(), 1.5);
  EXPECT_NEAR(cost.comm_start_delay_while_computing(), 40e-6, 1e-18);
  const Machine part =
      parse_machine(replaced("contention: 1.25", "contention: {transfer: 2}"), "m.yaml");
  EXPECT_EQ(part.contention, 1.0);
  EXPECT_EQ(part.transfer_contention, 2.0);
}

TEST(Machine, LaunchOverheads) {
  const Machine none = parse_machine(kGood, "m.yaml");
  EXPECT_EQ(none.launch_compute_s, 0.0);
  EXPECT_EQ(none.launch_comm_s, 0.0);
  const Machine m =
      parse_machine(std::string(kGood) + "launch_us: {compute: 5, comm: 12}\n", "m.yaml");
  const MachineCost cost(m);
  EXPECT_NEAR(cost.launch_seconds(StreamId::compute), 5e-6, 1e-18);
  EXPECT_NEAR(cost.launch_seconds(StreamId::comm), 12e-6, 1e-18);
  std::string e = error_of(std::string(kGood) + "launch_us: {compute: -1}\n");
  EXPECT_NE(e.find("launch_us.compute: '-1' must be >= 0"), std::string::npos) << e;
  e = error_of(std::string(kGood) + "launch_us: {gpu: 1}\n");
  EXPECT_NE(e.find("unknown key 'gpu' in launch_us; valid keys: compute, comm"), std::string::npos)
      << e;
}

TEST(Machine, UndefinedLinkClass) {
  const std::string e = error_of(replaced("inter_node: ib", "inter_node: roce"));
  EXPECT_NE(e.find("m.yaml:16: topology.inter_node: 'roce' is not a link class; valid: nvlink, ib"),
            std::string::npos)
      << e;
}

TEST(Machine, UnknownDType) {
  const std::string e = error_of(replaced("  fp32:", "  fp8:"));
  EXPECT_NE(e.find("m.yaml:10: compute: 'fp8' is not a dtype; valid: fp32, fp64, bf16, fp16"),
            std::string::npos)
      << e;
}

TEST(Machine, SaveParseRoundTrip) {
  Machine m = parse_machine(kGood, "m.yaml");
  m.source = "with \"quotes\" and\nnewline";
  m.compute[DType::fp32].peak_flops = 1.0 / 3.0 * 1e13;
  m.links[0].latency_s = 1.7e-6;
  m.contention = 1.0 + 1e-9;
  m.transfer_contention = 1.25;
  m.comm_start_delay_s = 12.5e-6;
  m.launch_compute_s = 4.5e-6;
  m.launch_comm_s = 9e-6;
  std::ostringstream out;
  save_machine(out, m);
  EXPECT_EQ(out.str().rfind("# ", 0), 0u) << "a header comment";
  const Machine back = parse_machine(out.str(), "saved.yaml");
  EXPECT_EQ(back.name, m.name);
  EXPECT_EQ(back.source, m.source);
  ASSERT_EQ(back.compute.size(), m.compute.size());
  for (const auto& [dtype, c] : m.compute) {
    const ComputeModel& b = back.compute.at(dtype);
    EXPECT_DOUBLE_EQ(b.peak_flops, c.peak_flops);
    EXPECT_DOUBLE_EQ(b.memory_bytes_per_s, c.memory_bytes_per_s);
    ASSERT_EQ(b.gemm_efficiency.size(), c.gemm_efficiency.size());
    for (std::size_t i = 0; i < c.gemm_efficiency.size(); ++i) {
      EXPECT_EQ(b.gemm_efficiency[i].m, c.gemm_efficiency[i].m);
      EXPECT_EQ(b.gemm_efficiency[i].n, c.gemm_efficiency[i].n);
      EXPECT_EQ(b.gemm_efficiency[i].k, c.gemm_efficiency[i].k);
      EXPECT_EQ(b.gemm_efficiency[i].efficiency, c.gemm_efficiency[i].efficiency);
    }
  }
  ASSERT_EQ(back.links.size(), m.links.size());
  for (std::size_t i = 0; i < m.links.size(); ++i) {
    EXPECT_EQ(back.links[i].name, m.links[i].name);
    EXPECT_DOUBLE_EQ(back.links[i].latency_s, m.links[i].latency_s);
    EXPECT_DOUBLE_EQ(back.links[i].bytes_per_s, m.links[i].bytes_per_s);
  }
  EXPECT_EQ(back.ranks_per_node, m.ranks_per_node);
  EXPECT_EQ(back.intra_node, m.intra_node);
  EXPECT_EQ(back.inter_node, m.inter_node);
  EXPECT_EQ(back.contention, m.contention);
  EXPECT_EQ(back.transfer_contention, m.transfer_contention);
  EXPECT_DOUBLE_EQ(back.comm_start_delay_s, m.comm_start_delay_s);
  EXPECT_DOUBLE_EQ(back.launch_compute_s, m.launch_compute_s);
  EXPECT_DOUBLE_EQ(back.launch_comm_s, m.launch_comm_s);
  std::ostringstream again;
  save_machine(again, back);
  EXPECT_EQ(again.str(), out.str());
}

TEST(Machine, InterpolationExactAtPointsAndBetween) {
  const MachineCost cost(parse_machine(kGood, "m.yaml"));
  EXPECT_DOUBLE_EQ(cost.gemm_efficiency(DType::bf16, 512, 512, 512), 0.3);
  EXPECT_DOUBLE_EQ(cost.gemm_efficiency(DType::bf16, 8192, 8192, 8192), 0.8);
  // 2048 is halfway between 512 and 8192 in log space: equal weights.
  EXPECT_NEAR(cost.gemm_efficiency(DType::bf16, 2048, 2048, 2048), 0.55, 1e-12);
  // Monotone along the diagonal, clamped outside the table.
  double last = 0;
  for (int64_t s = 512; s <= 8192; s *= 2) {
    const double e = cost.gemm_efficiency(DType::bf16, s, s, s);
    EXPECT_GE(e, last);
    last = e;
  }
  EXPECT_DOUBLE_EQ(cost.gemm_efficiency(DType::bf16, 64, 64, 64), 0.3);
  EXPECT_DOUBLE_EQ(cost.gemm_efficiency(DType::bf16, 65536, 65536, 65536), 0.8);
  EXPECT_DOUBLE_EQ(cost.gemm_efficiency(DType::fp32, 100, 200, 300), 1.0);  // no table
}

TEST(Machine, RooflineAndKnownTimes) {
  const MachineCost cost(parse_machine(kGood, "m.yaml"));
  // Compute bound at a table point: 2*8192^3 flops at 100 TFLOP/s * 0.8.
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  EXPECT_NEAR(cost.compute_seconds(gemm(8192, 8192, 8192), DType::bf16, 0), flops / 80e12, 1e-12);
  EXPECT_NEAR(cost.compute_seconds(gemm(8192, 8192, 8192, 3), DType::bf16, 0), 3 * flops / 80e12,
              1e-12);
  // A skinny GEMM (a matrix-vector product) is memory bound: its operands' bytes / 1 TB/s.
  const double bytes = (8192.0 * 8192.0 + 8192.0 + 8192.0) * 2;
  const Task skinny = gemm(8192, 1, 8192);
  const double t = cost.compute_seconds(skinny, DType::bf16, 0);
  EXPECT_NEAR(t, bytes / 1000e9, 1e-15);
  EXPECT_GT(t, skinny.flops / (100e12 * cost.gemm_efficiency(DType::bf16, 8192, 1, 8192)));
  // Element-wise tasks: add 3 passes, copy 2, fp32 4 bytes.
  Task add;
  add.kind = TaskKind::add;
  add.m = 1000;
  add.n = 1000;
  EXPECT_NEAR(cost.compute_seconds(add, DType::fp32, 0), 3 * 4e6 / 1000e9, 1e-18);
  Task copy = add;
  copy.kind = TaskKind::copy;
  EXPECT_NEAR(cost.compute_seconds(copy, DType::fp32, 0), 2 * 4e6 / 1000e9, 1e-18);
  EXPECT_DOUBLE_EQ(cost.compute_slowdown_while_transferring(), 1.25);
}

TEST(Machine, MissingDTypeNamesWhatTheMachineHas) {
  const MachineCost cost(parse_machine(kGood, "m.yaml"));
  try {
    cost.compute_seconds(gemm(64, 64, 64), DType::fp64, 0);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no compute model for dtype fp64; it has: fp32, bf16"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(cost.require(DType::bf16));
}

TEST(Machine, Topology) {
  const MachineCost cost(parse_machine(kGood, "m.yaml"));
  EXPECT_EQ(cost.link_class(0, 7), 0);
  EXPECT_EQ(cost.link_class(7, 8), 1);
  EXPECT_EQ(cost.link_class(8, 15), 0);
  EXPECT_EQ(cost.link_class(15, 0), 1);
  EXPECT_DOUBLE_EQ(cost.latency_seconds(7, 8), 5e-6);
  EXPECT_DOUBLE_EQ(cost.bytes_per_second(7, 8), 50e9);
  EXPECT_DOUBLE_EQ(cost.bytes_per_second(6, 7), 400e9);
  EXPECT_NEAR(cost.transfer_seconds(1000000, 6, 7), 2e-6 + 1e6 / 400e9, 1e-18);
  EXPECT_NEAR(cost.transfer_seconds(1000000, 7, 8), 5e-6 + 1e6 / 50e9, 1e-18);
}

TEST(Machine, ConstructorRejectsUndefinedLink) {
  Machine m = parse_machine(kGood, "m.yaml");
  m.inter_node = "roce";
  EXPECT_THROW(MachineCost{m}, InputError);
}

// Every machine file shipped in bench_configs/machines/ loads, prices a GEMM no faster than
// its peak and reads back as written. ctest sets FOB_SOURCE_DIR.
TEST(ShippedMachine, EveryFileLoads) {
  const char* root = std::getenv("FOB_SOURCE_DIR");
  if (!root || !*root) GTEST_SKIP() << "FOB_SOURCE_DIR is not set (ctest sets it)";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(root) /
                                                               "bench_configs/machines")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    ++files;
    const Machine m = load_machine(entry.path().string());
    EXPECT_EQ(m.name, entry.path().stem().string());
    EXPECT_FALSE(m.source.empty());
    const MachineCost cost(m);
    for (const auto& [dtype, c] : m.compute) {
      const double t = cost.compute_seconds(gemm(1024, 1024, 1024), dtype, 0);
      EXPECT_GE(t, 2.0 * 1024 * 1024 * 1024 / c.peak_flops);
    }
    std::ostringstream out;
    save_machine(out, m);
    EXPECT_NO_THROW(parse_machine(out.str(), "saved.yaml"));
  }
  EXPECT_GE(files, 4);
}

}  // namespace
}  // namespace fob
