// The GPU side of machine files (include/fob/machine.h): the wave model of GEMMs, the SMs an
// overlapping plan's GEMMs leave to NCCL, and NCCL's achieved rates by size.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "../common/machine_text.h"
#include "fob/machine.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

// 4 SMs of 1e12 flop/s each, one tile of 128 x 128 at full efficiency: times are easy to state.
const char* const kGpu = R"(name: gpu
source: "unit test"
compute:
  bf16:
    peak_tflops: 4
    memory_gbytes_per_s: 1000000
    gemm_tiles:
      - [128, 128, 1]
    gemm_k_overhead: 0
gpu: {sms: 4, comm_sms: 2, max_split_k: 1}
links:
  - name: nvlink
    latency_us: 3
    gbytes_per_s: 400
    achieved:
      all_gather: [[1048576, 10], [1073741824, 100]]
      send_recv: [[1000, 1], [1000000, 50]]
  - {name: ib, latency_us: 5, gbytes_per_s: 50}
topology: {ranks_per_node: 8, intra_node: nvlink, inter_node: ib}
)";

std::string error_of(const std::string& text) {
  return machine_error_of(text);
}

std::string replaced(const std::string& from, const std::string& to) {
  return replaced_in(kGpu, from, to);
}

Task gemm(int64_t m, int64_t n, int64_t k, int batch = 1) {
  return gemm_task(m, n, k, batch);
}

Task add_task() {
  Task add;
  add.kind = TaskKind::add;
  add.m = 64;
  add.n = 64;
  return add;
}

// One full 128 x 128 tile of depth k on one SM of 1e12 flop/s.
double tile_seconds(int64_t k) {
  return 2.0 * 128 * 128 * static_cast<double>(k) / 1e12;
}

TEST(MachineGpu, WavesQuantiseTheTileCount) {
  const MachineCost cost(parse_machine(kGpu, "m.yaml"));
  // 4 tiles fill the 4 SMs once; a fifth tile (257 rows) needs a second wave.
  EXPECT_DOUBLE_EQ(cost.compute_seconds(gemm(256, 256, 1024), DType::bf16, 0), tile_seconds(1024));
  EXPECT_DOUBLE_EQ(cost.compute_seconds(gemm(257, 256, 1024), DType::bf16, 0),
                   2 * tile_seconds(1024));
  // A thin slice of one tile row costs a whole wave: as long as the full 4-tile GEMM.
  EXPECT_DOUBLE_EQ(cost.compute_seconds(gemm(1, 256, 1024), DType::bf16, 0), tile_seconds(1024));
  // Batch entries are tiles too.
  EXPECT_DOUBLE_EQ(cost.compute_seconds(gemm(128, 128, 1024, 8), DType::bf16, 0),
                   2 * tile_seconds(1024));
}

TEST(MachineGpu, GemmsBesideTransfersRunOnTheSmsNcclLeaves) {
  const MachineCost cost(parse_machine(kGpu, "m.yaml"));
  // comm_sms 2 of 4: the 4 tiles take two waves on the 2 SMs left.
  EXPECT_DOUBLE_EQ(cost.compute_seconds_beside_comm(gemm(256, 256, 1024), DType::bf16, 0),
                   2 * tile_seconds(1024));
  // Element-wise tasks are memory bound either way.
  const Task add = add_task();
  EXPECT_DOUBLE_EQ(cost.compute_seconds_beside_comm(add, DType::bf16, 0),
                   cost.compute_seconds(add, DType::bf16, 0));
}

TEST(MachineGpu, TheFastestTileAndSplitWin) {
  // A second, smaller tile at half efficiency: a 128 x 128 GEMM is one big tile (one SM busy)
  // or four small ones (every SM busy, each at half speed on a quarter of the work) -- the
  // same time; a 64 x 64 GEMM is one small tile, cheaper than a padded big one.
  const MachineCost two(parse_machine(
      replaced("      - [128, 128, 1]\n", "      - [128, 128, 1]\n      - [64, 64, 0.5]\n"),
      "m.yaml"));
  EXPECT_DOUBLE_EQ(two.compute_seconds(gemm(64, 64, 1024), DType::bf16, 0),
                   tile_seconds(1024) / 4 / 0.5);
  // Splitting k in 4 fills the 4 SMs with one tile's work: a quarter of the time, plus the
  // fp32 partial results written and read at the memory bandwidth.
  const MachineCost split(parse_machine(replaced("max_split_k: 1", "max_split_k: 4"), "m.yaml"));
  const double partials = 2.0 * 4 * 128 * 128 * 4 / 1e15;
  EXPECT_DOUBLE_EQ(split.compute_seconds(gemm(128, 128, 1024), DType::bf16, 0),
                   tile_seconds(256) + partials);
  // Never a split past one wave: 4 tiles already fill the SMs.
  EXPECT_DOUBLE_EQ(split.compute_seconds(gemm(256, 256, 1024), DType::bf16, 0), tile_seconds(1024));
}

TEST(MachineGpu, KOverheadAndMemoryRoofline) {
  const MachineCost overhead(
      parse_machine(replaced("gemm_k_overhead: 0", "gemm_k_overhead: 64"), "m.yaml"));
  EXPECT_DOUBLE_EQ(overhead.compute_seconds(gemm(128, 128, 1024), DType::bf16, 0),
                   tile_seconds(1024 + 64));
  // At 1 GB/s the operands' bytes take longer than the tiles.
  const MachineCost slow(
      parse_machine(replaced("memory_gbytes_per_s: 1000000", "memory_gbytes_per_s: 1"), "m.yaml"));
  const double bytes = (128.0 * 1024 + 1024.0 * 128 + 128.0 * 128) * 2;
  EXPECT_DOUBLE_EQ(slow.compute_seconds(gemm(128, 128, 1024), DType::bf16, 0), bytes / 1e9);
}

TEST(MachineGpu, AThinGemmStreamsAtItsShareOfTheMemoryRate) {
  // At 1 GB/s and a GEMM memory efficiency of 0.25 the operands move at 0.25 GB/s: four times
  // the copy rate's time; element-wise tasks still move at the full rate.
  const std::string slow = replaced("memory_gbytes_per_s: 1000000", "memory_gbytes_per_s: 1");
  const MachineCost full(parse_machine(slow, "m.yaml"));
  const MachineCost quarter(
      parse_machine(replaced_in(slow, "gemm_k_overhead: 0\n",
                                "gemm_k_overhead: 0\n    gemm_memory_efficiency: 0.25\n"),
                    "m.yaml"));
  const Task g = gemm(128, 128, 1024);
  EXPECT_DOUBLE_EQ(quarter.compute_seconds(g, DType::bf16, 0),
                   4 * full.compute_seconds(g, DType::bf16, 0));
  const Task add = add_task();
  EXPECT_DOUBLE_EQ(quarter.compute_seconds(add, DType::bf16, 0),
                   full.compute_seconds(add, DType::bf16, 0));
  // A GEMM whose tiles take longer than its bytes is not touched.
  const MachineCost fast(parse_machine(
      replaced("gemm_k_overhead: 0\n", "gemm_k_overhead: 0\n    gemm_memory_efficiency: 0.25\n"),
      "m.yaml"));
  EXPECT_DOUBLE_EQ(fast.compute_seconds(g, DType::bf16, 0), tile_seconds(1024));
  EXPECT_NE(error_of(replaced("gemm_k_overhead: 0\n",
                              "gemm_k_overhead: 0\n    gemm_memory_efficiency: 0\n"))
                .find("gemm_memory_efficiency: '0' must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("gemm_k_overhead: 0\n",
                              "gemm_k_overhead: 0\n    gemm_memory_efficiency: 1.5\n"))
                .find("must be in (0, 1]"),
            std::string::npos);
}

TEST(MachineGpu, AchievedRatesInterpolateInLogSpace) {
  const std::vector<RatePoint> table = {{1000, 1e9}, {1000000, 100e9}};
  EXPECT_DOUBLE_EQ(achieved_rate(table, 1000), 1e9);
  EXPECT_DOUBLE_EQ(achieved_rate(table, 1000000), 100e9);
  // Half-way in log size is half-way in log rate: the geometric mean.
  EXPECT_NEAR(achieved_rate(table, 31623), 10e9, 1e7);
  // Below the first size the first size's time; above the last the last rate.
  EXPECT_DOUBLE_EQ(100 / achieved_rate(table, 100), 1000 / 1e9);
  EXPECT_DOUBLE_EQ(achieved_rate(table, 1000000000), 100e9);
}

TEST(MachineGpu, LinkRatesUseTheTableOfTheOpAndClass) {
  const MachineCost cost(parse_machine(kGpu, "m.yaml"));
  const LinkRate ag = cost.link_rate(CollectiveOp::all_gather, 1048576, 0, 1);
  EXPECT_EQ(ag.latency_s, 0);
  EXPECT_DOUBLE_EQ(ag.bytes_per_s, 10e9);
  const LinkRate p2p = cost.link_rate(CollectiveOp::none, 1000000, 0, 1);
  EXPECT_DOUBLE_EQ(p2p.bytes_per_s, 50e9);
  // No reduce-scatter table: the nominal latency and rate; nor between nodes.
  const LinkRate rs = cost.link_rate(CollectiveOp::reduce_scatter, 1048576, 0, 1);
  EXPECT_DOUBLE_EQ(rs.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(rs.bytes_per_s, 400e9);
  const LinkRate ib = cost.link_rate(CollectiveOp::all_gather, 1048576, 0, 8);
  EXPECT_DOUBLE_EQ(ib.bytes_per_s, 50e9);
}

// A simulated all-gather alone takes nccl-tests' time for its size at the table's busbw.
TEST(MachineGpu, ACollectiveAloneTakesNcclTestsTime) {
  const std::string constant = replaced("all_gather: [[1048576, 10], [1073741824, 100]]",
                                        "all_gather: [[1048576, 80], [1073741824, 80]]");
  const MachineCost cost(parse_machine(constant, "m.yaml"));
  CaseSpec spec;
  spec.workload = find_workload("ag_gemm");
  spec.shape = Shape{1, 4096, 1024, 4096, 0};
  spec.dtype = DType::bf16;
  spec.world = 8;
  spec.strategy = parse_strategy("comm_only");
  const CaseResult r = simulate_spec(spec, cost, "c");
  const double size = 4096.0 * 1024 * 2;  // the gathered X
  EXPECT_NEAR(r.step(0), size * 7 / 8 / 80e9, 1e-12);
}

TEST(MachineGpu, BadInputNamesTheKey) {
  EXPECT_NE(error_of(replaced("gpu: {sms: 4, comm_sms: 2, max_split_k: 1}\n", ""))
                .find("gemm_tiles: the wave model needs a gpu section"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("    gemm_k_overhead: 0\n",
                              "    gemm_efficiency: [[512, 512, 512, 0.3]]\n"))
                .find("not both"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("comm_sms: 2", "comm_sms: 4")).find("gpu.comm_sms: '4' must be in"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("max_split_k: 1", "max_split_k: 3")).find("power of 2"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("[1073741824, 100]", "[1000, 100]")).find("above the size"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("send_recv:", "sendrecv:")).find("valid keys: send_recv"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("[128, 128, 1]", "[128, 128, 1.5]")).find("must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("[128, 128, 1]", "[0, 128, 1]")).find(">= 1"), std::string::npos);
}

TEST(MachineGpu, SaveParseRoundTrip) {
  const Machine m = parse_machine(
      replaced("gemm_k_overhead: 0\n", "gemm_k_overhead: 0\n    gemm_memory_efficiency: 0.5\n"),
      "m.yaml");
  std::ostringstream out;
  save_machine(out, m);
  const Machine back = parse_machine(out.str(), "saved.yaml");
  EXPECT_EQ(back.gpu.sms, 4);
  EXPECT_EQ(back.gpu.comm_sms, 2);
  EXPECT_EQ(back.gpu.max_split_k, 1);
  ASSERT_EQ(back.compute.at(DType::bf16).gemm_tiles.size(), 1u);
  EXPECT_EQ(back.compute.at(DType::bf16).gemm_tiles[0].n, 128);
  EXPECT_DOUBLE_EQ(back.compute.at(DType::bf16).gemm_memory_efficiency, 0.5);
  const auto& ag =
      back.links[0].achieved[static_cast<size_t>(achieved_index(CollectiveOp::all_gather))];
  ASSERT_EQ(ag.size(), 2u);
  EXPECT_EQ(ag[1].bytes, 1073741824);
  EXPECT_DOUBLE_EQ(ag[1].bytes_per_s, 100e9);
  const MachineCost a(m), b(back);
  EXPECT_DOUBLE_EQ(a.compute_seconds(gemm(300, 500, 777), DType::bf16, 0),
                   b.compute_seconds(gemm(300, 500, 777), DType::bf16, 0));
}

}  // namespace
}  // namespace fob
