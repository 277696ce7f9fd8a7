// What docs/fairness.md rests on, checked without a GPU: slicing gathers in place,
// GEMMs beside a transfer are told apart from those without, timing data is not the verified
// data, the fast math mode has its bound, and what the hardware said (NCCL's log, the facts a
// case records) is read back right.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/device_plan.h"
#include "fob/hardware.h"
#include "fob/inputs.h"
#include "fob/nccl_log.h"
#include "fob/plan_builder.h"
#include "fob/result_files.h"
#include "fob/tolerance.h"
#include "fob/workload.h"

namespace fob {
namespace {

Plan plan_of(const char* workload, const char* strategy, int world, int rank) {
  CaseSpec spec;
  spec.workload = find_workload(workload);
  spec.shape = {2, 64, 32, 128, 4};
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return make_plan(spec, rank);
}

// Every all-gather of slicing writes one contiguous range in place (NCCL's in-place
// all-gather, the baseline's collective) where the gathered X is read by nothing else, and
// every rank's own piece is an input where the chunk-major layout puts it.
TEST(SlicingInPlace, ChunksAreContiguousWhereTheLayoutIsFree) {
  for (const char* workload : {"ag_gemm", "mlp", "attn", "ag_gemm_w"}) {
    for (int rank : {0, 3}) {
      const Plan plan = plan_of(workload, "slicing:4", 4, rank);
      int gathers = 0;
      for (const Task& t : plan.tasks) {
        if (t.op != CollectiveOp::all_gather) continue;
        ++gathers;
        EXPECT_EQ(t.dst_stride_rows, t.c.rows) << workload << " " << t.label;
        EXPECT_EQ(t.a.row, t.c.row + rank * t.c.rows) << workload << " " << t.label;
      }
      EXPECT_EQ(gathers, 4) << workload;
      const int x = plan.buffer_id("x");
      ASSERT_GE(x, 0);
      EXPECT_FALSE(plan.buffers[x].layout.empty()) << workload;
      EXPECT_EQ(stage_elements(plan), 0) << workload;
    }
  }
}

// mlp_bwd's weight gradients read the gathered rows in token order: slicing keeps the order
// there, and its strided chunks need no scratch either.
TEST(SlicingInPlace, TokenOrderKeptWhereAGemmReadsIt) {
  const Plan plan = plan_of("mlp_bwd", "slicing:2", 4, 1);
  for (const BufferSpec& b : plan.buffers) EXPECT_TRUE(b.layout.empty()) << b.name;
  EXPECT_EQ(stage_elements(plan), 0);
}

TEST(Relayout, MovesInputsAndMapsChecks) {
  Plan plan;
  plan.world = 1;
  PlanBuilder b(plan);
  const int x = b.buffer("x", 4, 2);
  b.input({x, 1, 2, "X", 10, 0});
  b.relayout(x, {{.row = 0, .logical_row = 2, .rows = 2}, {.row = 2, .logical_row = 0, .rows = 2}});
  // Tensor rows 10, 11 sat at buffer rows 1, 2: now at 3 and 0.
  ASSERT_EQ(plan.inputs.size(), 2u);
  EXPECT_EQ(plan.inputs[0].row, 0);
  EXPECT_EQ(plan.inputs[0].rows, 1);
  EXPECT_EQ(plan.inputs[0].global_row, 11);
  EXPECT_EQ(plan.inputs[1].row, 3);
  EXPECT_EQ(plan.inputs[1].global_row, 10);
  const std::vector<double> logical = {0, 0, 1, 1, 2, 2, 3, 3};
  EXPECT_EQ(in_buffer_order(plan.buffers[x], logical),
            (std::vector<double>{2, 2, 3, 3, 0, 0, 1, 1}));
  EXPECT_EQ(logical_row(plan.buffers[x], 3), 1);
  // Not a permutation, or a buffer already used: a defect of the strategy.
  EXPECT_THROW(b.relayout(b.buffer("y", 4, 2), {{.row = 0, .logical_row = 0, .rows = 3}}),
               std::logic_error);
  EXPECT_THROW(b.relayout(x, {{.row = 0, .logical_row = 0, .rows = 4}}), std::logic_error);
}

// A GEMM is given fewer SMs only where a transfer may run beside it: baseline's never, the
// overlapping strategies' some, and comm tasks are never marked.
TEST(BesideTransfers, OnlyOverlappableGemms) {
  const Plan base = plan_of("mlp", "baseline", 4, 0);
  for (char c : tasks_beside_transfers(base)) EXPECT_EQ(c, 0);
  for (const char* s : {"flash", "slicing:4", "decompose"}) {
    const Plan plan = plan_of("mlp", s, 4, 2);
    const std::vector<char> beside = tasks_beside_transfers(plan);
    int marked = 0;
    for (const Task& t : plan.tasks) {
      if (t.stream == StreamId::comm) {
        EXPECT_EQ(beside[t.id], 0) << s;
      }
      marked += beside[t.id];
    }
    EXPECT_GT(marked, 0) << s;
    EXPECT_EQ(marked > 0, plan_overlaps(plan)) << s;
  }
}

// Timing data is normal, spread as the region's role says, and no value of it is an integer
// as the verified inputs all are.
TEST(TimingData, NormalAndNotTheVerifiedData) {
  InputFill f;
  f.tensor_hash = tensor_hash(1, "X");
  f.rows = 64;
  f.cols = 256;
  std::vector<float> act(f.rows * f.cols), verified(f.rows * f.cols);
  fill_timing(f, act.data());
  fill_input(f, verified.data());
  double sum = 0, squares = 0;
  int integers = 0;
  for (float v : act) {
    sum += v;
    squares += double(v) * v;
    integers += v == std::round(v);
  }
  const double n = static_cast<double>(act.size());
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(squares / n), 1.0, 0.05);
  EXPECT_LT(integers, 5);
  for (float v : verified) EXPECT_EQ(v, std::round(v));
  f.timing_sigma = kTimingWeightSigma;
  std::vector<float> weights(f.rows * f.cols);
  fill_timing(f, weights.data());
  squares = 0;
  for (float v : weights) squares += double(v) * v;
  EXPECT_NEAR(std::sqrt(squares / n), kTimingWeightSigma, 0.002);
}

TEST(FastMath, BoundGrowsWhereTheModeRounds) {
  const Plan plan = plan_of("mlp", "flash", 2, 0);
  for (const OutputCheck& c : plan.checks) {
    EXPECT_EQ(check_tolerance(plan, c.kind, true).bound - check_tolerance(plan, c.kind).bound,
              fast_math_tolerance(plan.dtype));
  }
  EXPECT_EQ(fast_math_tolerance(DType::fp32), 4 * std::ldexp(1.0, -11));
  EXPECT_EQ(fast_math_tolerance(DType::bf16), 4 * std::ldexp(1.0, -8));
  EXPECT_EQ(fast_math_tolerance(DType::fp64), 0.0);
}

std::string info(const std::string& text) {
  return "node1:4242:4250 [0] NCCL INFO " + text;
}

// NCCL 2.28's own lines (src/init.cc, src/graph/search.cc, src/transport/p2p.cc, shm.cc, net.cc).
TEST(NcclLog, InitLinesGiveChannelsPathAndCap) {
  const NcclCommFacts f = parse_nccl_init(
      {info("ncclCommSplit comm 0x5555 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 1b000 parent "
            "0x4444 splitCount 1 color 0 key 1 - Init START"),
       info("Comm config Max CTAs set to 16"),
       info("comm 0x5555 rank 1 nRanks 8 nNodes 1 localRanks 8 localRank 1 MNNVL 0"),
       info("Pattern 1, crossNic 0, nChannels 16, bw 40.000000/40.000000, type NVL/PIX, "
            "sameChannels 1"),
       info("Pattern 4, crossNic 0, nChannels 16, bw 40.000000/40.000000, type PHB/PIX, "
            "sameChannels 1"),
       info("16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p "
            "channels per peer"),
       "node1:4242:4250 [0] misc.cc:12 NCCL WARN something"});
  EXPECT_EQ(f.coll_channels, 16);
  EXPECT_EQ(f.p2p_channels, 16);
  EXPECT_EQ(f.p2p_channels_per_peer, 2);
  EXPECT_EQ(f.nvls_channels, 0);
  EXPECT_EQ(f.ring_intra, "PHB");  // the ring's pattern, not the tree's
  EXPECT_EQ(f.ring_inter, "PIX");
  EXPECT_EQ(f.max_ctas, 16);
  EXPECT_EQ(f.local_ranks, 8);
  EXPECT_EQ(f.nodes, 1);
  EXPECT_EQ(f.comm, "0x5555");
  EXPECT_EQ(parse_nccl_init({info("NCCL_MAX_CTAS set by environment to 8.")}).max_ctas, 8);
  EXPECT_EQ(parse_nccl_init({}).coll_channels, -1);
  EXPECT_EQ(nccl_warnings({info("x"), "h:1:2 [0] a.cc:3 NCCL WARN y"}).size(), 1u);
}

TEST(NcclLog, TransportsPerPeer) {
  const std::vector<std::string> lines = {
      info("Channel 00/1 : 1[1] -> 2[2] via P2P/CUMEM/read"),
      info("Channel 01/1 : 1[1] -> 2[2] via P2P/CUMEM/read"),
      info("Channel 00/0 : 1[1] -> 2[2] via P2P/CUMEM"),
      info("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"),
      info("Channel 00/1 : 3[3] -> 1[1] [receive] via NET/IB/0/GDRDMA"),
      info("Channel 00/1 : 5[5] -> 6[6] via P2P/CUMEM")};
  const auto p2p = parse_nccl_transports(lines, 1, true);
  ASSERT_EQ(p2p.size(), 3u);
  EXPECT_EQ(p2p.at(2), std::vector<std::string>{"P2P/CUMEM/read"});
  EXPECT_EQ(p2p.at(0), std::vector<std::string>{"SHM/direct/direct"});
  EXPECT_EQ(p2p.at(3), std::vector<std::string>{"NET/IB/0/GDRDMA"});
  const auto coll = parse_nccl_transports(lines, 1, false);
  EXPECT_EQ(coll.at(2), std::vector<std::string>{"P2P/CUMEM"});
  EXPECT_TRUE(nvlink_path("NVL"));
  EXPECT_FALSE(nvlink_path("PHB"));
}

TEST(HardwareFacts, ThrottleAndNvlink) {
  CaseResult c = small_case("0000", 2);
  c.facts = {"rank 0: gpu_throttled=no",
             "rank 1: gpu_throttled=sw_power_cap",
             "rank 0: nccl_ring_path=NVL/PIX",
             "rank 0: nccl_local_ranks=2",
             "junk",
             "rank x: a=b"};
  EXPECT_EQ(parse_facts(c.facts).size(), 4u);
  EXPECT_EQ(throttle_doubt(c), "GPU throttled: rank 1 sw_power_cap");
  ResultFile file;
  file.cases = {c};
  EXPECT_EQ(nvlink_verdict(file), "");
  file.cases[0].facts = {"rank 0: nccl_ring_path=PHB/PIX", "rank 0: nccl_local_ranks=2"};
  EXPECT_NE(nvlink_verdict(file).find("PHB"), std::string::npos);
  EXPECT_EQ(nvlink_verdict(file).find("NVML"), std::string::npos);
  file.system.hardware = "rank 0: gpu_nvlink_to=0000:1b:00.0: yes";
  EXPECT_NE(nvlink_verdict(file).find("nccl#1066"), std::string::npos);
  // One rank per node: nothing to reach over NVLink.
  file.cases[0].facts = {"rank 0: nccl_ring_path=PHB/NET", "rank 0: nccl_local_ranks=1"};
  EXPECT_EQ(nvlink_verdict(file), "");
}

// Launch times, speed probes and facts travel through the journal and the finished file, rounds
// included.
TEST(HardwareFacts, RoundTripThroughJournalAndFile) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  CaseResult c = small_case("0000", 2);
  c.iters = 2;
  c.round_iters = {2};
  c.step_seconds = {1e-3, 2e-3, 3e-3, 4e-3};
  c.task_start = {0, 0, 0, 0};
  c.task_end = c.step_seconds;
  c.launch_seconds = {1e-5, 2e-5, 3e-5, 4e-5};
  c.round_probe = {2e-4};
  c.facts = {"rank 0: nccl_communicator=reference", "rank 1: gpu_throttled=no"};
  SystemInfo sys = small_system("cuda", "nccl", 2, "cupti kernel activity");
  sys.hardware = "rank 0: nvml=libnvidia-ml.so.1\nrank 1: cpu_binding=8 CPUs";
  ResultWriter writer(path, false, RunInfo{}, sys);
  writer.add_case(c);
  CaseResult more = c;
  more.iters = 3;
  more.round_iters = {2, 1};
  more.step_seconds.insert(more.step_seconds.end(), {5e-3, 6e-3});
  more.task_start.insert(more.task_start.end(), {0, 0});
  more.task_end = more.step_seconds;
  more.launch_seconds.insert(more.launch_seconds.end(), {5e-5, 6e-5});
  more.round_probe = {2e-4, 3.5e-4};
  writer.add_case(more);
  for (const std::string& file : {path + ".partial", path}) {
    if (file == path) writer.finish();
    const ResultFile back = read_results(file);
    ASSERT_EQ(back.cases.size(), 1u) << file;
    EXPECT_EQ(back.cases[0].launch_seconds, more.launch_seconds) << file;
    EXPECT_EQ(back.cases[0].round_probe, more.round_probe) << file;
    EXPECT_EQ(back.cases[0].facts, more.facts) << file;
    EXPECT_EQ(back.system.hardware, sys.hardware) << file;
  }
}

}  // namespace
}  // namespace fob
