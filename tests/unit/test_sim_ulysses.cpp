// The simulator on the ulysses workload (DeepSpeed-Ulysses) against closed forms derived from
// its plans, and the all-to-all collective's pairwise steps: step s uses link r -> r+s, so its
// steps can differ in link class, and it shares only the running step's ports.
//
// Notation (per rank, batch B, sequence S, hidden D, N ranks; L = B*S/N local rows):
//   g  = one destination's QKV projection (L x D x 3D/N); the whole projection is N g
//   g2 = one head group's output projection (L x D/N x D) = g / 3; N g2 in all
//   a  = the attention of this rank's heads over every token (B * 4 S^2 D / N flops)
//   c1 = alpha + one sequence's all-to-all #1 block (S/N rows of 3D/N) / bw
//   c2 = alpha + one sequence's all-to-all #2 block (S/N rows of D/N) / bw = alpha + (c1 - alpha)/3
// Element-wise tasks (softmax) are free, as in test_sim.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fob/calibrate.h"
#include "fob/machine.h"
#include "fob/plan.h"
#include "fob/sim.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

const int kWorlds[] = {2, 4, 8, 16, 32, 64};
const double kInf = std::numeric_limits<double>::infinity();

#define EXPECT_CLOSE(actual, expected) EXPECT_NEAR(actual, expected, 1e-12 * (expected))

// 64 heads of 2 columns, so that every world size up to 64 splits the heads and the sequence.
Shape ulysses_shape(int64_t batch) {
  Shape s;
  s.batch = batch;
  s.seq = 256;
  s.hidden = 128;
  s.ffn = 128;
  s.heads = 64;
  return s;
}

std::vector<Plan> ulysses_plans(const std::string& strategy, int world, int64_t batch = 1) {
  CaseSpec spec;
  spec.workload = find_workload("ulysses");
  spec.shape = ulysses_shape(batch);
  spec.dtype = DType::fp32;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return make_plans(spec);
}

// The closed forms' pieces for one world size, with rates chosen so that g and c1 - alpha are
// the given times.
struct Ulysses {
  int n = 0;
  int64_t batch = 1;
  double g = 0, g2 = 0, a = 0, c1 = 0, c2 = 0;
  double flops_per_second = 0, bytes_per_second = 0, latency = 0;

  Ulysses(int world, double g_seconds, double c_seconds, double alpha = 0, int64_t b = 1)
      : n(world), batch(b), latency(alpha) {
    const Shape s = ulysses_shape(b);
    const double nn = world, seq = static_cast<double>(s.seq), d = static_cast<double>(s.hidden);
    const double rows = static_cast<double>(b) * seq / nn;  // L
    const double qkv_cols = 3 * d / nn, head_cols = d / nn;
    flops_per_second = 2 * rows * d * qkv_cols / g_seconds;
    bytes_per_second = seq / nn * qkv_cols * 4 / c_seconds;
    g = g_seconds;
    g2 = 2 * rows * head_cols * d / flops_per_second;
    a = static_cast<double>(b) * 4 * seq * seq * d / nn / flops_per_second;
    c1 = alpha + c_seconds;
    c2 = alpha + seq / nn * head_cols * 4 / bytes_per_second;
  }
  UniformCost cost() const {
    return UniformCost(flops_per_second, kInf, latency, bytes_per_second);
  }
  double t_comp() const { return n * g + a + n * g2; }
  // Two all-to-alls, each N-1 pairwise steps of one message holding a block of every sequence:
  // the latency once per step, the bytes B times.
  double t_comm() const {
    const double b = static_cast<double>(batch);
    return (n - 1) * (2 * latency + b * (c1 - latency) + b * (c2 - latency));
  }
  double step(const std::string& strategy) const {
    return simulate_case(ulysses_plans(strategy, n, batch), cost(), "0").step(0);
  }
};

// g and c regimes: transfer faster than, equal to, and slower than one destination's
// projection; with and without latency.
struct Regime {
  double g, c, alpha;
};
const Regime kRegimes[] = {{1.0 / 1024, 1.0 / 4096, 0},
                           {1.0 / 1024, 1.0 / 1024, 0},
                           {1.0 / 2048, 1.0 / 512, 0},
                           {1.0 / 1024, 1.0 / 4096, 1.0 / 65536},
                           {1.0 / 2048, 1.0 / 512, 1.0 / 65536}};

// The pieces themselves, checked once against the plans: g2 = g / 3 (the output projection's
// K is D/N, the QKV projection's N is 3D/N) and c2 - alpha = (c1 - alpha) / 3.
TEST(SimUlysses, PiecesMatchThePlans) {
  const Ulysses u(8, 1.0 / 1024, 1.0 / 4096, 1.0 / 65536);
  EXPECT_CLOSE(u.g2, u.g / 3);
  EXPECT_CLOSE(u.c2 - u.latency, (u.c1 - u.latency) / 3);
  const UniformCost cost = u.cost();
  const Plan plan = ulysses_plans("baseline", 8).front();
  double collective_bytes = 0;
  for (const Task& t : plan.tasks) {
    if (t.kind == TaskKind::collective) {
      EXPECT_EQ(t.op, CollectiveOp::all_to_all) << t.label;
      collective_bytes += static_cast<double>(t.bytes);
    }
  }
  // Task::bytes is (N-1) blocks: what the rank sends over all steps.
  EXPECT_CLOSE(collective_bytes / cost.bytes_per_second(0, 1), 7 * (u.c1 + u.c2 - 2 * u.latency));
}

// compute_only is the GEMMs alone, comm_only the two all-to-alls (one collective each, a chunk
// per sequence): 2 (N-1) steps in all.
TEST(SimUlysses, ReferenceModes) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      for (int64_t batch : {1, 2}) {
        const Ulysses u(n, r.g, r.c, r.alpha, batch);
        EXPECT_CLOSE(u.step("compute_only"), u.t_comp()) << n << " batch " << batch;
        EXPECT_CLOSE(u.step("comm_only"), u.t_comm()) << n << " batch " << batch;
        EXPECT_CLOSE(u.step("comm_only"), 2.0 * (n - 1) * u.latency + static_cast<double>(batch) *
                                                                          (n - 1) * 4.0 / 3.0 *
                                                                          (u.c1 - u.latency))
            << n;
      }
    }
  }
}

// baseline is serial: projection, all-to-all #1, attention, all-to-all #2, output projection,
// however many sequences the all-to-alls carry.
TEST(SimUlysses, BaselineIsComputePlusAllToAlls) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      for (int64_t batch : {1, 2, 4}) {
        const Ulysses u(n, r.g, r.c, r.alpha, batch);
        EXPECT_CLOSE(u.step("baseline"), u.t_comp() + u.t_comm()) << n << " batch " << batch;
      }
    }
  }
}

// flash (m = 1, batch 1). All-to-all #1: the projection for r+k (g) is followed by exchange k
// (c1) on the comm stream, exchanges back to back; the own heads' projection comes last and
// needs no transfer. Exchange k ends at max_j<=k (j g + (k - j + 1) c1), so the attention
// starts at max(N g, g + (N-1) c1) = g + (N-1) max(g, c1). All-to-all #2: every exchange waits
// for the attention; exchange k ends k c2 after it. The own heads' output projection (g2)
// needs none, then the one for r-k waits for exchange k:
//   step = g + (N-1) max(g, c1) + a + max(N g2, (N-1) c2 + g2).
// With c1 <= g and c2 <= g2 that is T_comp: nothing exposed.
TEST(SimUlysses, FlashClosedForm) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      const Ulysses u(n, r.g, r.c, r.alpha);
      const double want =
          u.g + (n - 1) * std::max(u.g, u.c1) + u.a + std::max(n * u.g2, (n - 1) * u.c2 + u.g2);
      const double flash = u.step("flash");
      EXPECT_CLOSE(flash, want) << n << " g " << r.g << " c " << r.c << " alpha " << r.alpha;
      if (u.c1 <= u.g && u.c2 <= u.g2) {
        EXPECT_CLOSE(flash, u.t_comp()) << n;
      }
      // Exposed: (N-1)(c1 - g) + (N-1)(c2 - g2) when every transfer is slower than its GEMM.
      if (u.c1 >= u.g && u.c2 >= u.g2) {
        EXPECT_CLOSE(flash, u.g + (n - 1) * u.c1 + u.a + (n - 1) * u.c2 + u.g2) << n;
      }
      EXPECT_LE(flash, u.step("baseline") * (1 + 1e-12)) << n;
    }
  }
}

// Every strategy that applies to ulysses, sliced or not, at every world size: no faster than
// the compute alone or the transfers alone (slicing adds latency per chunk; flash_qs and the
// others move the same bytes), and flash:m no slower than baseline.
TEST(SimUlysses, EveryStrategyWithinBounds) {
  // Transfers faster than, equal to, and slower than compute (with latency); each case's plans
  // are built once for all three.
  const Regime regimes[] = {kRegimes[0], kRegimes[1], kRegimes[4]};
  for (int n : {2, 8, 64}) {
    for (const Strategy* s : all_strategies()) {
      if (!strategy_applies(*s, find_workload("ulysses")) || s->is_reference()) continue;
      for (int m : {1, 4}) {
        if (s->param_name == nullptr && m > 1) continue;
        // (Appending, not ":" + to_string(m): GCC 12 at -O3 warns of an overlapping copy.)
        std::string spec = s->name;
        if (s->param_name != nullptr) {
          spec += ':';
          spec += std::to_string(m);
        }
        const std::vector<Plan> plans = ulysses_plans(spec, n);
        for (Regime r : regimes) {
          const Ulysses u(n, r.g, r.c, r.alpha);
          const double t = simulate_case(plans, u.cost(), "0").step(0);
          EXPECT_GE(t, std::max(u.t_comp(), u.t_comm()) * (1 - 1e-12)) << spec << " N=" << n;
          if (s->name == std::string("flash")) {
            EXPECT_LE(t, u.step("baseline") * (1 + 1e-12)) << spec << " N=" << n;
          }
        }
      }
    }
  }
}

// Link classes that depend on the pair, so that pairwise steps differ: neighbours on a ring
// (shift 1 or N-1) are fast, every other pair slow. Free compute, no latency unless given.
const double kFast = 4 * 1024.0 * 1024.0, kSlow = 1024.0 * 1024.0;
int ring_distance_class(int from, int to, int n) {
  const int shift = (to - from + n) % n;
  return shift == 1 || shift == n - 1 ? 0 : 1;
}
class RingTopology : public CostModel {
 public:
  RingTopology(int n, double latency_fast, double latency_slow)
      : n_(n), latency_{latency_fast, latency_slow} {}
  double compute_seconds(const Task&, DType, int) const override { return 0; }
  double transfer_seconds(int64_t bytes, int from, int to) const override {
    return latency_seconds(from, to) + static_cast<double>(bytes) / bytes_per_second(from, to);
  }
  double latency_seconds(int from, int to) const override {
    return latency_[ring_distance_class(from, to, n_)];
  }
  double bytes_per_second(int from, int to) const override {
    return ring_distance_class(from, to, n_) == 0 ? kFast : kSlow;
  }
  int link_class(int from, int to) const override { return ring_distance_class(from, to, n_); }

 private:
  int n_;
  double latency_[2];
};

// An all-to-all's steps 1 and N-1 run on the fast links, the N-3 others on slow ones; a ring
// all-gather runs every step on r -> r+1, fast.
TEST(SimUlysses, PairwiseStepsTakeTheirOwnLinkClass) {
  for (int n : {4, 8, 16}) {
    const double lf = 1.0 / 65536, ls = 1.0 / 16384;
    const RingTopology cost(n, lf, ls);
    const std::vector<Plan> plans = ulysses_plans("comm_only", n);
    double want = 0;
    for (const Task& t : plans.front().tasks) {
      ASSERT_EQ(t.kind, TaskKind::collective);
      const double block = static_cast<double>(t.bytes) / (n - 1);
      want += 2 * (lf + block / kFast) + (n - 3) * (ls + block / kSlow);
    }
    EXPECT_CLOSE(simulate_case(plans, cost, "0").step(0), want) << n;

    CaseSpec ag;
    ag.workload = find_workload("ag_gemm");
    ag.shape = ulysses_shape(1);
    ag.world = n;
    ag.strategy = parse_strategy("comm_only");
    const std::vector<Plan> ring = make_plans(ag);
    const Task& gather = ring.front().tasks.front();
    ASSERT_EQ(gather.op, CollectiveOp::all_gather);
    const double block = static_cast<double>(gather.bytes) / (n - 1);
    EXPECT_CLOSE(simulate_case(ring, cost, "0").step(0), (n - 1) * (lf + block / kFast)) << n;
  }
}

// A machine file's topology: within a node every step is the intra-node link; across nodes
// every pairwise step has a link that leaves its node, so every step is the inter-node link.
TEST(SimUlysses, AllToAllOnANodeTopology) {
  Machine m;
  m.name = "test";
  m.compute[DType::fp32] = ComputeModel{1e15, 1e15, {}, {}, 0};
  m.links = {{"fast", 1e-6, 400e9, {}}, {"slow", 5e-6, 50e9, {}}};
  m.ranks_per_node = 8;
  m.intra_node = "fast";
  m.inter_node = "slow";
  const MachineCost cost(m);
  for (int n : {8, 16, 64}) {
    const std::vector<Plan> plans = ulysses_plans("comm_only", n);
    const LinkClass& link = n <= m.ranks_per_node ? m.links[0] : m.links[1];
    double want = 0;
    for (const Task& t : plans.front().tasks) {
      want +=
          (n - 1) * (link.latency_s + static_cast<double>(t.bytes) / (n - 1) / link.bytes_per_s);
    }
    EXPECT_CLOSE(simulate_case(plans, cost, "0").step(0), want) << n;
  }
}

// Hand-built plans on 3 ranks, a link class per shift: an all-to-all of one block per step
// (2 steps, T each alone) beside a 2-block message from rank 0. The all-to-all is listed only
// on its running step's ports.
//   0 -> 1 (shift 1): step 1 shares rank 0's egress and rank 1's ingress with the message, both
//     at half rate, until 2T (one block each); step 2 and the message's last block then run on
//     different classes, alone: both end at 3T.
//   0 -> 2 (shift 2): the message runs alone during step 1 (one block by T), then shares with
//     step 2 at half rate: both end at 3T.
// Priced as a ring (every step on 0 -> 1) it would be 4T and 4T, then 2T and 2T.
TEST(SimUlysses, AllToAllSharesOnlyItsRunningStepsPorts) {
  const double bw = 1024.0 * 1024.0, t_block = 1.0 / 1024;
  const int64_t block = 1024;
  class PerShift : public CostModel {
   public:
    explicit PerShift(double bw) : bw_(bw) {}
    double compute_seconds(const Task&, DType, int) const override { return 0; }
    double transfer_seconds(int64_t bytes, int, int) const override {
      return static_cast<double>(bytes) / bw_;
    }
    double latency_seconds(int, int) const override { return 0; }
    double bytes_per_second(int, int) const override { return bw_; }
    int link_class(int from, int to) const override { return (to - from + 3) % 3; }

   private:
    double bw_;
  };
  const PerShift cost(bw);
  for (int to : {1, 2}) {
    Plan base = ulysses_plans("comm_only", 2).front();
    base.tasks.clear();
    std::vector<Plan> plans(3, base);
    for (int r = 0; r < 3; ++r) {
      Plan& p = plans[static_cast<size_t>(r)];
      p.rank = r;
      p.world = 3;
      Task a2a;
      a2a.id = 0;
      a2a.stream = StreamId::comm;
      a2a.kind = TaskKind::collective;
      a2a.op = CollectiveOp::all_to_all;
      a2a.bytes = 2 * block;
      a2a.label = "a2a";
      p.tasks.push_back(a2a);
    }
    Task send;
    send.id = 1;
    send.kind = TaskKind::send;
    send.send_peer = to;
    send.bytes = 2 * block;
    send.label = "send";
    plans[0].tasks.push_back(send);
    Task recv = send;
    recv.kind = TaskKind::recv;
    recv.send_peer = -1;
    recv.recv_peer = 0;
    recv.label = "recv";
    plans[static_cast<size_t>(to)].tasks.push_back(recv);
    const CaseResult r = simulate_case(plans, cost, "0");
    const size_t width = static_cast<size_t>(r.max_tasks);
    const double message_end = r.task_end[1], a2a_end = r.task_end[0];
    EXPECT_CLOSE(r.task_end[static_cast<size_t>(to) * width + 1], message_end);
    EXPECT_CLOSE(message_end, 3 * t_block) << to;
    EXPECT_CLOSE(a2a_end, 3 * t_block) << to;
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_CLOSE(r.task_end[static_cast<size_t>(rank) * width], a2a_end) << to << rank;
    }
  }
}

// calibrate reads an all-to-all as N-1 steps of Task::bytes / (N-1): from ulysses cases timed
// on a known link it gives that link back, and says how it read them.
TEST(SimUlysses, CalibrateReadsAllToAllAsPairwiseSteps) {
  const double latency = 1e-5, bandwidth = 1e9;
  const UniformCost known(1e10, 5e9, latency, bandwidth);
  for (const char* transport : {"mpi", "nccl"}) {
    ResultFile f;
    f.run.created_utc = "2025-01-01T00:00:00Z";
    f.system.backend = transport == std::string("nccl") ? "cuda" : "cpu";
    f.system.transport = transport;
    f.system.world_size = 4;
    f.system.hostnames = "node7,node7,node7,node7";
    int id = 0;
    for (int64_t batch : {1, 3}) {
      for (const char* strategy : {"compute_only", "comm_only"}) {
        CaseSpec spec;
        spec.workload = find_workload("ulysses");
        spec.shape = ulysses_shape(batch);
        spec.shape.seq = 64 * batch;  // blocks of different sizes
        spec.world = 4;
        spec.strategy = parse_strategy(strategy);
        std::vector<Plan> plans;
        for (int r = 0; r < 4; ++r) plans.push_back(make_plan(spec, r));
        f.cases.push_back(simulate_case(plans, known, std::to_string(id++)));
      }
    }
    FitReport report;
    const Machine m = calibrate({f}, "fitted", &report);
    ASSERT_EQ(m.links.size(), 1u);
    EXPECT_NEAR(m.links[0].latency_s / latency, 1.0, 1e-6) << transport;
    EXPECT_NEAR(m.links[0].bytes_per_s / bandwidth, 1.0, 1e-6) << transport;
    auto noted = [&](const std::string& part) {
      return std::any_of(report.notes.begin(), report.notes.end(),
                         [&](const std::string& n) { return n.find(part) != std::string::npos; });
    };
    EXPECT_TRUE(noted("all-to-all point(s) read as N-1 pairwise steps")) << transport;
    EXPECT_EQ(noted("NCCL sends an all-to-all"), transport == std::string("nccl"));
  }
}

}  // namespace
}  // namespace fob
