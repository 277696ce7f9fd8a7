// The cuda backend's decisions that need no GPU: device selection, shared-device detection,
// memory sizing, collective scratch, graph-capture eligibility and which plans overlap.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fob/device_plan.h"
#include "fob/workload.h"

namespace fob {
namespace {

TEST(SelectDevice, LocalRankModuloVisibleDevices) {
  // mpirun with every GPU visible: rank i on GPU i.
  EXPECT_EQ(select_device(0, 8, nullptr), 0);
  EXPECT_EQ(select_device(7, 8, nullptr), 7);
  // srun --gpus-per-task=1: each rank sees one GPU, device 0, whatever its local rank.
  EXPECT_EQ(select_device(5, 1, nullptr), 0);
  // More ranks than GPUs wrap around (allowed with --transport mpi).
  EXPECT_EQ(select_device(3, 2, ""), 1);
}

TEST(SelectDevice, OverrideAndErrors) {
  EXPECT_EQ(select_device(3, 4, "2"), 2);
  EXPECT_THROW(select_device(0, 4, "4"), InputError);
  EXPECT_THROW(select_device(0, 4, "gpu1"), InputError);
  EXPECT_THROW(select_device(0, 0, nullptr), InputError);
  try {
    select_device(0, 2, "9");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("FOB_DEVICE"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("0..1"), std::string::npos);
  }
}

TEST(SharedDevice, NamesTheFirstTwoRanks) {
  EXPECT_EQ(ranks_sharing_a_device({"a/0:1b", "a/0:1c", "b/0:1b"}), std::make_pair(-1, -1));
  EXPECT_EQ(ranks_sharing_a_device({"a/0:1b", "a/0:1c", "a/0:1b", "a/0:1c"}), std::make_pair(0, 2));
  EXPECT_EQ(ranks_sharing_a_device({}), std::make_pair(-1, -1));
}

Plan mlp_plan(const char* strategy, DType dtype, int world) {
  CaseSpec spec;
  spec.workload = find_workload("mlp");
  spec.shape = {2, 64, 32, 128};
  spec.dtype = dtype;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return make_plan(spec, 0);
}

TEST(MemorySizing, BuffersAtTheDtypePlusWorkspace) {
  const Plan plan = mlp_plan("baseline", DType::bf16, 4);
  int64_t expected = 0;
  for (const BufferSpec& b : plan.buffers) expected += b.rows * b.cols * 2;
  EXPECT_EQ(device_bytes_needed(plan, 0), expected);
  EXPECT_EQ(device_bytes_needed(plan, 1 << 20), expected + (1 << 20));
  // fp32 doubles it; flash_direct's per-peer buffers cost more than baseline's.
  EXPECT_EQ(device_bytes_needed(mlp_plan("baseline", DType::fp32, 4), 0), 2 * expected);
  EXPECT_GT(device_bytes_needed(mlp_plan("flash_direct", DType::bf16, 4), 0), 0);
}

// Transport ce maps peers' memory within one node: the refusal names which ranks are where.
TEST(RanksAcrossNodes, NamesEachNodesRanks) {
  EXPECT_EQ(ranks_across_nodes({}), "");
  EXPECT_EQ(ranks_across_nodes({0, 0, 0, 0}), "");
  EXPECT_EQ(ranks_across_nodes({0, 0, 2, 2}), "the ranks run on 2 nodes (ranks 0-1 and 2-3)");
  EXPECT_EQ(ranks_across_nodes({0, 1, 0, 1, 4}), "the ranks run on 3 nodes (ranks 0,2; 1,3 and 4)");
}

TEST(GraphCapture, OnlyWithDeviceSideTransfers) {
  const Plan plan = mlp_plan("flash", DType::fp32, 2);
  std::string why;
  EXPECT_TRUE(graph_capture_eligible(plan, "nccl", &why));
  EXPECT_FALSE(graph_capture_eligible(plan, "mpi", &why));
  EXPECT_NE(why.find("host"), std::string::npos);
  EXPECT_FALSE(graph_capture_eligible(plan, "ce", &why));
  EXPECT_NE(why.find("flags per iteration"), std::string::npos) << why;
  Plan empty;
  EXPECT_FALSE(graph_capture_eligible(empty, "nccl", &why));
}

}  // namespace
}  // namespace fob

namespace fob {
namespace {

// NCCL's collective scratch: a loopback reduce-scatter receives one block of partial sums; no
// all-gather stages anything (slicing's chunks are chunk-major where the workload allows, and
// move point-to-point into place where it does not). mlp at M = 128, D = 32: a rank's block is
// 32 x 32 at N = 4.
TEST(StageElements, StridedChunksAndLoopbackReduceScatter) {
  auto plan = [](const char* s, bool loopback) {
    CaseSpec spec;
    spec.workload = find_workload("mlp");
    spec.shape = {2, 64, 32, 128};
    spec.world = 4;
    spec.strategy = parse_strategy(s);
    spec.loopback = loopback;
    return make_plan(spec, 1);
  };
  EXPECT_EQ(stage_elements(plan("baseline", false)), 0);
  EXPECT_EQ(stage_elements(plan("baseline", true)), 32 * 32);
  EXPECT_EQ(stage_elements(plan("slicing:2", false)), 0);
  EXPECT_EQ(stage_elements(plan("flash_direct", false)), 0);
}

// An all-to-all sends and receives every block where it lies, whatever its two strides (a
// slicing chunk's are the sequence's and the buffer's, not its rows): ulysses needs no scratch,
// in loopback neither.
TEST(StageElements, AllToAllNeedsNone) {
  for (const char* s : {"baseline", "slicing:2", "comm_only"}) {
    for (bool loopback : {false, true}) {
      CaseSpec spec;
      spec.workload = find_workload("ulysses");
      spec.shape = {2, 96, 144, 144, 12};
      spec.world = 4;
      spec.strategy = parse_strategy(s);
      spec.loopback = loopback;
      const Plan plan = make_plan(spec, 1);
      int strided = 0;
      for (const Task& t : plan.tasks) {
        if (t.op != CollectiveOp::all_to_all) continue;
        if (t.src_stride_rows != t.c.rows || t.dst_stride_rows != t.c.rows) ++strided;
      }
      EXPECT_GT(strided, 0) << s << ": no strided all-to-all to check";
      EXPECT_EQ(stage_elements(plan), 0) << s << (loopback ? " loopback" : "");
    }
  }
}

// Which plans leave SMs to NCCL: those where a compute and a comm task can run at once.
TEST(PlanOverlaps, SerialPlansDoNotOverlapTheOthersDo) {
  for (Workload w : {find_workload("mlp"), find_workload("attn"), find_workload("gemm_rs_grad"),
                     find_workload("mlp_bwd")}) {
    for (int n : {2, 4}) {
      auto plan = [&](const char* s) {
        CaseSpec spec;
        spec.workload = w;
        spec.shape = {2, 96, 144, 144, 12};
        spec.world = n;
        spec.strategy = parse_strategy(s);
        return make_plan(spec, 1);
      };
      const std::string at = std::string(to_string(w)) + " N=" + std::to_string(n);
      // mlp_bwd's baseline gathers X again while dX computes, as Megatron's backward does.
      EXPECT_EQ(plan_overlaps(plan("baseline")), w == find_workload("mlp_bwd")) << at;
      EXPECT_FALSE(plan_overlaps(plan("compute_only"))) << at;
      EXPECT_FALSE(plan_overlaps(plan("comm_only"))) << at;
      EXPECT_TRUE(plan_overlaps(plan("flash"))) << at;
      EXPECT_TRUE(plan_overlaps(plan("slicing:2"))) << at;
      EXPECT_TRUE(plan_overlaps(plan("flash_direct"))) << at;
    }
  }
}

// ulysses: the reference modes and baseline never overlap, the strategies do.
TEST(PlanOverlaps, UlyssesOverlapsOnlyInItsStrategies) {
  for (int n : {2, 4}) {
    auto plan = [&](const char* s) {
      CaseSpec spec;
      spec.workload = find_workload("ulysses");
      spec.shape = {2, 96, 144, 144, 12};
      spec.world = n;
      spec.strategy = parse_strategy(s);
      return make_plan(spec, 1);
    };
    const std::string at = "ulysses N=" + std::to_string(n);
    EXPECT_FALSE(plan_overlaps(plan("compute_only"))) << at;
    EXPECT_FALSE(plan_overlaps(plan("comm_only"))) << at;
    // One all-to-all for every sequence of the batch: nothing runs beside it.
    EXPECT_FALSE(plan_overlaps(plan("baseline"))) << at;
    for (const char* s : {"slicing:2", "decompose", "flash", "flash_direct", "flash_qs"}) {
      EXPECT_TRUE(plan_overlaps(plan(s))) << at << " " << s;
    }
  }
}

// Hand-built: a transfer that depends on the first GEMM and feeds the third leaves the second
// free to run beside it; tying the second GEMM to it as well makes the plan serial.
TEST(PlanOverlaps, AComputeTaskBetweenAncestorsAndDescendants) {
  Plan p;
  auto task = [&](StreamId s, std::vector<int> deps) {
    Task t;
    t.id = static_cast<int>(p.tasks.size());
    t.stream = s;
    t.kind = s == StreamId::comm ? TaskKind::exchange : TaskKind::gemm;
    t.deps = std::move(deps);
    p.tasks.push_back(t);
  };
  task(StreamId::compute, {});
  task(StreamId::comm, {0});
  task(StreamId::compute, {});
  task(StreamId::compute, {1});
  EXPECT_TRUE(plan_overlaps(p));
  p.tasks[2].deps = {1};
  EXPECT_FALSE(plan_overlaps(p));
}

// Every row map in one allocation: the source rows first, then the weights of the maps that
// have them, each map's offsets recorded; a plan without maps needs no bytes for them.
TEST(RowMapImage, SourcesThenWeightsBackToBack) {
  Plan plan;
  plan.buffers.push_back({"X", 4, 2, {}});
  EXPECT_EQ(row_map_bytes(plan), 0);
  EXPECT_TRUE(row_map_image(plan).bytes.empty());
  const int64_t buffers = plan.buffer_bytes();
  plan.row_maps = {{{3, -1, 0}, {2, 0, 1}}, {{1, 1}, {}}};
  EXPECT_EQ(row_map_bytes(plan), (3 + 3 + 2) * 8);
  EXPECT_EQ(device_bytes_needed(plan, 100), buffers + (3 + 3 + 2) * 8 + 100);
  const RowMapImage image = row_map_image(plan);
  ASSERT_EQ(image.bytes.size(), 64u);
  EXPECT_EQ(image.src, (std::vector<int64_t>{0, 24}));
  EXPECT_EQ(image.weight, (std::vector<int64_t>{40, -1}));
  auto at = [&](int64_t offset, auto value) {
    std::memcpy(&value, image.bytes.data() + offset, sizeof value);
    return value;
  };
  EXPECT_EQ(at(0, int64_t{}), 3);
  EXPECT_EQ(at(8, int64_t{}), -1);
  EXPECT_EQ(at(32, int64_t{}), 1);
  EXPECT_EQ(at(40, double{}), 2.0);
  EXPECT_EQ(at(56, double{}), 1.0);
}

}  // namespace
}  // namespace fob
