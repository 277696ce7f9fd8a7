// calibrate() against synthetic results files whose timings come from a known machine: the
// simulator runs the real plans with a cost model of per-shape GEMM efficiencies, a memory
// rate, a link and a contention factor, and the fit must give them back.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/measured_case.h"
#include "../common/small_case.h"
#include "fob/calibrate.h"
#include "fob/sim.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

constexpr double kPeak = 1e10;
constexpr double kMemory = 5e9;
constexpr double kLatency = 1e-5;
constexpr double kBandwidth = 1e9;
constexpr double kSlowdown = 1.15;

// A different efficiency for every shape, in [0.4, 0.9].
double efficiency(int64_t m, int64_t n, int64_t k) {
  return 0.4 + 0.5 * static_cast<double>((m + 2 * n + 3 * k) % 7) / 6.0;
}

class KnownMachine : public CostModel {
 public:
  explicit KnownMachine(double transfer_slowdown = 1, double comm_start_delay = 0,
                        double launch = 0)
      : transfer_slowdown_(transfer_slowdown),
        comm_start_delay_(comm_start_delay),
        launch_(launch) {}
  double compute_seconds(const Task& t, DType dtype, int /*rank*/) const override {
    if (t.kind == TaskKind::gemm) {
      return t.batch * 2.0 * static_cast<double>(t.m * t.n * t.k) /
             (kPeak * efficiency(t.m, t.n, t.k));
    }
    const double passes = t.kind == TaskKind::add ? 3.0 : 2.0;
    return passes * static_cast<double>(t.m * t.n) * dtype_bytes(dtype) / kMemory;
  }
  double transfer_seconds(int64_t bytes, int /*from*/, int /*to*/) const override {
    return kLatency + static_cast<double>(bytes) / kBandwidth;
  }
  double latency_seconds(int /*from*/, int /*to*/) const override { return kLatency; }
  double bytes_per_second(int /*from*/, int /*to*/) const override { return kBandwidth; }
  double compute_slowdown_while_transferring() const override { return kSlowdown; }
  double transfer_slowdown_while_computing() const override { return transfer_slowdown_; }
  double comm_start_delay_while_computing() const override { return comm_start_delay_; }
  // The comm stream's is twice the compute stream's.
  double launch_seconds(StreamId stream) const override {
    return stream == StreamId::compute ? launch_ : 2 * launch_;
  }

 private:
  double transfer_slowdown_, comm_start_delay_, launch_;
};

Shape shape(int64_t hidden) {
  Shape s;
  s.batch = 2;
  s.seq = 32;
  s.hidden = hidden;
  s.ffn = 2 * hidden;
  s.heads = 4;
  return s;
}

CaseResult measured(Workload workload, const Shape& s, const std::string& strategy, int world,
                    const std::string& id, bool outlier = true,
                    const KnownMachine& machine = KnownMachine()) {
  return measured_case(workload, s, strategy, world, id, outlier, machine);
}

ResultFile file_of(std::vector<CaseResult> cases, int world) {
  return measured_file(std::move(cases), world);
}

bool has_note(const FitReport& rep, const std::string& part) {
  return std::any_of(rep.notes.begin(), rep.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got / want, 1.0, 1e-6) << what << ": got " << got << ", want " << want;
}

TEST(Calibrate, RecoversAKnownMachine) {
  const int world = 4;
  std::vector<CaseResult> cases;
  int id = 0;
  for (int64_t hidden : {64, 128}) {
    for (const char* strategy : {"compute_only", "comm_only", "flash"}) {
      cases.push_back(measured(find_workload("mlp"), shape(hidden), strategy, world,
                               "mlp" + std::to_string(id++)));
    }
  }
  // attn's compute_only: batched GEMMs (one per sequence, heads batched) and softmax.
  cases.push_back(measured(find_workload("attn"), shape(64), "compute_only", world, "attn"));
  FitReport rep;
  const Machine m = calibrate({file_of(cases, world)}, "testbox", &rep);

  EXPECT_EQ(m.name, "testbox");
  EXPECT_NE(m.source.find("calibrated by fobench calibrate"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("node7"), std::string::npos) << m.source;
  ASSERT_EQ(m.compute.count(DType::fp32), 1U);
  const ComputeModel& cm = m.compute.at(DType::fp32);

  // The measured peak is the best shape's rate; every shape's rate comes back exactly.
  double best = 0;
  for (const GemmPoint& p : cm.gemm_efficiency) best = std::max(best, efficiency(p.m, p.n, p.k));
  expect_rel(cm.peak_flops, kPeak * best, "peak");
  ASSERT_GE(cm.gemm_efficiency.size(), 4U);
  bool batched = false;
  for (const GemmPoint& p : cm.gemm_efficiency) {
    expect_rel(
        cm.peak_flops * p.efficiency, kPeak * efficiency(p.m, p.n, p.k),
        "rate of " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k));
    EXPECT_LE(p.efficiency, 1.0);
    batched = batched || p.k == 64 / 4;  // attention's Q K^T contracts over one head
  }
  EXPECT_TRUE(batched);
  expect_rel(cm.memory_bytes_per_s, kMemory, "memory");

  ASSERT_EQ(m.links.size(), 1U);
  EXPECT_EQ(m.links[0].name, "emulated");
  expect_rel(m.links[0].latency_s, kLatency, "latency");
  expect_rel(m.links[0].bytes_per_s, kBandwidth, "bandwidth");
  EXPECT_EQ(m.intra_node, "emulated");
  EXPECT_EQ(m.inter_node, "emulated");
  EXPECT_EQ(m.ranks_per_node, world);
  EXPECT_TRUE(has_note(rep, "one host (node7)"));

  expect_rel(m.contention, kSlowdown, "contention");

  ASSERT_FALSE(rep.residuals.empty());
  bool link_residual = false;
  for (const FitReport::Residual& r : rep.residuals) {
    expect_rel(r.fitted_s, r.measured_s, r.what);
    link_residual = link_residual || r.what.rfind("link emulated", 0) == 0;
  }
  EXPECT_TRUE(link_residual);
}

// Under moe the task of one id is a GEMM of another shape on every rank (each rank's experts got
// other tokens): each rank's duration is a sample of its own task's shape, never of another
// rank's task of that id.
TEST(Calibrate, EachRanksExpertGemmsAreSamplesOfTheirOwnShapes) {
  const int world = 2;
  Shape s = shape(64);
  s.moe = MoeShape{4, 2, 96, 1.5, 0, 0};
  std::vector<CaseResult> cases;
  for (const char* strategy : {"compute_only", "comm_only"}) {
    cases.push_back(measured(find_workload("moe"), s, strategy, world, strategy, false));
  }
  const Machine m = calibrate({file_of(cases, world)}, "testbox", nullptr);
  const ComputeModel& cm = m.compute.at(DType::fp32);
  // Skewed routing gives the ranks' experts different row counts: more shapes than one rank has.
  ASSERT_GE(cm.gemm_efficiency.size(), 6U);
  for (const GemmPoint& p : cm.gemm_efficiency) {
    expect_rel(
        cm.peak_flops * p.efficiency, kPeak * efficiency(p.m, p.n, p.k),
        "rate of " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k));
  }
}

// Transfers that slow down under compute and wait to be posted while their rank computes, and
// launch overheads: the fit finds all four from the transfers' windows and waits. At world 2 every
// transfer involves both ranks, so "a rank it involves computes" is exact for messages and rings
// alike.
TEST(Calibrate, RecoversTransferContentionAndStartDelay) {
  const int world = 2;
  const double transfer_slowdown = 1.3, delay = 3e-6, launch = 5e-7;
  const KnownMachine machine(transfer_slowdown, delay, launch);
  std::vector<CaseResult> cases;
  for (const char* strategy : {"compute_only", "comm_only", "flash", "slicing:2", "decompose"}) {
    cases.push_back(
        measured(find_workload("mlp"), shape(256), strategy, world, strategy, false, machine));
  }
  // A second message size separates the link's latency from its bandwidth.
  cases.push_back(
      measured(find_workload("mlp"), shape(128), "comm_only", world, "c", false, machine));
  FitReport rep;
  const Machine m = calibrate({file_of(cases, world)}, "interfering", &rep);
  EXPECT_NEAR(m.transfer_contention, transfer_slowdown, 1e-9);
  EXPECT_NEAR(m.comm_start_delay_s, delay, 1e-12);
  EXPECT_TRUE(has_note(rep, "contention.transfer = 1.3"));
  EXPECT_NEAR(m.launch_compute_s, launch, 1e-15);
  EXPECT_NEAR(m.launch_comm_s, 2 * launch, 1e-15);

  // Without either effect, neither is found.
  cases.clear();
  for (const char* strategy : {"compute_only", "comm_only", "flash", "slicing:2", "decompose"}) {
    cases.push_back(measured(find_workload("mlp"), shape(256), strategy, world, strategy, false));
  }
  const Machine plain = calibrate({file_of(cases, world)}, "plain", nullptr);
  EXPECT_EQ(plain.transfer_contention, 1.0);
  EXPECT_EQ(plain.comm_start_delay_s, 0.0);
  EXPECT_EQ(plain.launch_compute_s, 0.0);
  EXPECT_EQ(plain.launch_comm_s, 0.0);
}

TEST(Calibrate, OneMessageSizeGivesZeroLatency) {
  const int world = 2;
  FitReport rep;
  ResultFile f = file_of({measured(find_workload("mlp"), shape(64), "compute_only", world, "a"),
                          measured(find_workload("mlp"), shape(64), "comm_only", world, "b")},
                         world);
  f.system.link_emulation = "none";
  const Machine m = calibrate({f}, "one", &rep);
  ASSERT_EQ(m.links.size(), 1U);
  EXPECT_EQ(m.links[0].name, "shm");
  EXPECT_EQ(m.links[0].latency_s, 0.0);
  // Through the origin: every point is (block, L + block / B).
  const double block = 64.0 / world * 64 * 4;  // [tokens / N, hidden] fp32
  expect_rel(m.links[0].bytes_per_s, block / (kLatency + block / kBandwidth), "bandwidth");
  EXPECT_TRUE(has_note(rep, "only one message size"));
  EXPECT_EQ(m.contention, 1.0);
  EXPECT_TRUE(has_note(rep, "contention = 1"));
  // mlp has no element-wise task at this world size: the default, said so.
  EXPECT_TRUE(has_note(rep, "default"));
}

TEST(Calibrate, CountsRanksPerHost) {
  const int world = 4;
  ResultFile f = file_of({measured(find_workload("mlp"), shape(64), "compute_only", world, "a"),
                          measured(find_workload("mlp"), shape(64), "comm_only", world, "b")},
                         world);
  f.system.hostnames = "n1,n1,n2,n2";
  FitReport rep;
  const Machine m = calibrate({f}, "two", &rep);
  EXPECT_EQ(m.ranks_per_node, 2);
  EXPECT_EQ(m.intra_node, m.inter_node);
  EXPECT_TRUE(has_note(rep, "2 hosts"));
}

TEST(Calibrate, NothingToFitIsAnInputError) {
  const int world = 2;
  const ResultFile comm =
      file_of({measured(find_workload("mlp"), shape(64), "comm_only", world, "a")}, world);
  try {
    calibrate({comm}, "x", nullptr);
    FAIL() << "no GEMMs accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GEMM"), std::string::npos) << e.what();
  }
  const ResultFile comp =
      file_of({measured(find_workload("mlp"), shape(64), "compute_only", world, "a")}, world);
  try {
    calibrate({comp}, "x", nullptr);
    FAIL() << "no transfers accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("comm_only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(calibrate({}, "x", nullptr), InputError);
}

TEST(Calibrate, SkipsCasesWhosePlansChanged) {
  const int world = 2;
  std::vector<CaseResult> cases = {
      measured(find_workload("mlp"), shape(64), "compute_only", world, "a"),
      measured(find_workload("mlp"), shape(64), "comm_only", world, "b"),
      measured(find_workload("mlp"), shape(128), "compute_only", world, "c")};
  cases[2].tasks[0].flops += 1;  // no longer the plan make_plan gives
  FitReport rep;
  const Machine m = calibrate({file_of(cases, world)}, "x", &rep);
  EXPECT_TRUE(has_note(rep, "case c"));
  // mlp 64's two GEMMs are both 64x64x64 at world 2; case c's would be 64x128x128.
  const std::vector<GemmPoint>& points = m.compute.at(DType::fp32).gemm_efficiency;
  ASSERT_EQ(points.size(), 1U);
  EXPECT_EQ(points[0].k, 64);
}

// Calibrates `files` with `room` bytes of address space beyond what the process maps now, then
// exits 0 when the fit's notes name `note`, 1 when not (a death test's child).
[[noreturn]] void calibrate_within(const std::vector<ResultFile>& files, rlim_t room,
                                   const std::string& note) {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlim_t most =
      static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + room;
  const rlimit mem{most, most};
  setrlimit(RLIMIT_AS, &mem);
  FitReport rep;
  calibrate(files, "x", &rep);
  std::exit(has_note(rep, note) ? 0 : 1);
}

// A crafted case claims 2048 ranks of Flash-Overlap (thousands of tasks each) but records one
// task per rank: calibrate makes no plan past the tasks the file holds, so it leaves the case
// out within a small allowance of memory, where it once took gigabytes.
TEST(Calibrate, ACaseClaimingAHugeWorldCostsWhatItsFileHolds) {
  const int world = 2048;
  CaseResult big = small_case("big", world);
  big.workload = "mlp_bwd";
  big.strategy = "flash";
  big.seq = 2 * world;
  big.hidden = 4 * world;
  big.ffn = 4 * world;
  big.iters = 1;
  big.step_seconds.assign(world, 1e-3);
  big.task_start.assign(world, 0.0);
  big.task_end.assign(world, 1e-3);
  big.timers = {"host steady_clock"};
  big.iteration_timer.assign(world, 0);
  ASSERT_TRUE(big.arrays_match());
  std::vector<CaseResult> cases = {
      measured(find_workload("mlp"), shape(64), "compute_only", 2, "a"),
      measured(find_workload("mlp"), shape(64), "comm_only", 2, "b")};
  std::vector<ResultFile> files = {file_of(cases, 2), file_of({big}, world)};
  EXPECT_EXIT(calibrate_within(files, rlim_t{256} << 20, "more tasks now than recorded"),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace fob
