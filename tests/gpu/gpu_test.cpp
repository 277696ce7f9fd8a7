// The cuda backend on a real GPU (label `gpu`), one workload per run (--workload=W) so that
// every ctest test names the workload it covers. Run under mpirun:
// - 1 rank, --transport=nccl: the 1-rank plans, and the plans of 2- and 4-rank cases in loopback
//   (every exchange a send and a receive to itself in one NCCL group, the collectives on the
//   1-rank communicator, inputs that repeat so the result is the N-rank one), so that
//   ncclSend/ncclRecv, ncclAllGather/ncclReduceScatter, ulysses' all-to-all (one group of
//   sends and receives), the events between the streams, the stream priorities and NCCL
//   inside graph capture all run on one GPU;
// - several ranks sharing one GPU, --transport=mpi: host-staged transfers;
// - a rank per GPU, --transport=ce: copies into peers' memory on the copy engines (skipped where
//   the machine has fewer GPUs than ranks).
// fp32 is bit-exact against the oracle (through attention's softmax: within its bound), bf16
// within its stated bound, checked before and after the timed iterations (with --graphs, on a
// replay). Exit 77 (skipped) only when this machine has no NVIDIA driver; a GPU the backend
// cannot use is a failure, with the reason.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "../common/forwarding_backend.h"
#include "../common/mpi_gtest.h"
#include "../common/workload_cases.h"
#include "fob/backend.h"
#include "fob/device_plan.h"
#include "fob/executor.h"
#include "fob/hardware.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

constexpr int kSkip = 77;
std::string g_transport = "nccl";
Workload g_workload = find_workload("mlp");
// --small: the workload's small shape (WorkloadDef::small_shape; attention: 4 heads of 12 and
// sequences of 24), for the cuda model, whose attention softmax runs 256 fibers a row with every
// access checked.
bool g_small = false;

CaseSpec gpu_case(const std::string& strategy, int world, DType dtype, bool loopback) {
  CaseSpec spec = test_case(g_workload, strategy, world, dtype, loopback);
  if (g_small) spec.shape = g_workload->small_shape.value_or(g_workload->check_shape);
  return spec;
}

struct Gpu : ::testing::Test {
  int rank = 0, world = 1;
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
  }
  // moe routes other tokens on every rank: no process stands in for the others.
  bool loopback_possible() const {
    return g_transport == "nccl" && world == 1 && !g_workload->no_loopback;
  }
  std::unique_ptr<Backend> backend(bool loopback = false, bool graphs = false) const {
    BackendOptions o;
    o.transport = g_transport;
    o.loopback = loopback;
    o.graphs = graphs;
    return make_cuda_backend(o);
  }
  static ExecOptions options() {
    ExecOptions o;
    o.iters = 3;
    o.warmup = 1;
    o.timeout_s = 120;
    return o;
  }
  // Runs every strategy of the workload at `n` ranks (n > world: loopback) and checks each.
  void verify_all(Backend& b, int n, DType dtype, const std::vector<std::string>& strategies) {
    Executor executor(b, MPI_COMM_WORLD);
    const bool loopback = n != world;
    for (const std::string& s : strategies) {
      Plan plan = make_plan(gpu_case(s, n, dtype, loopback), loopback ? 0 : rank);
      CaseResult r = executor.run_case(plan, options(), "gpu");
      const std::string what = std::string(to_string(g_workload)) + " " + s + " " +
                               to_string(dtype) + " N=" + std::to_string(n) +
                               (loopback ? " loopback" : "");
      EXPECT_EQ(r.verified, 1) << what;
      if (dtype == DType::fp32 && !g_workload->has_heads) {
        EXPECT_EQ(r.max_abs_err, 0.0) << what;
      }
    }
  }
};

bool applies(const std::string& strategy) {
  return strategy_applies(*parse_strategy(strategy).strategy, g_workload);
}

// strategies_for(), and query split wherever it applies (attn and ulysses).
std::vector<std::string> every_strategy() {
  std::vector<std::string> s = strategies_for(g_workload);
  for (const char* qs : {"flash_qs", "flash_qs:2"}) {
    if (applies(qs) && std::find(s.begin(), s.end(), qs) == s.end()) s.emplace_back(qs);
  }
  return s;
}

std::vector<std::string> half_strategies() {
  std::vector<std::string> s;
  for (const char* name :
       {"baseline", "slicing:2", "decompose", "flash:2", "flash_direct", "flash_qs:2"}) {
    if (applies(name)) s.emplace_back(name);
  }
  return s;
}

TEST_F(Gpu, EveryStrategyIsExactInFp32) {
  auto b = backend();
  verify_all(*b, world, DType::fp32, every_strategy());
}

TEST_F(Gpu, Bf16VerifiesWithinItsBound) {
  auto b = backend();
  verify_all(*b, world, DType::bf16, half_strategies());
}

TEST_F(Gpu, LoopbackMovesEveryTransferThroughNccl) {
  if (!loopback_possible()) GTEST_SKIP() << "loopback runs on one rank with NCCL";
  auto b = backend(true);
  for (int n : {2, 4}) verify_all(*b, n, DType::fp32, every_strategy());
  verify_all(*b, 2, DType::bf16, half_strategies());
}

// The graph is captured from the second iteration and replayed for every timed one; the check
// after timing runs on a replay, so a broken capture fails here.
TEST_F(Gpu, GraphsReplayVerifiedWithNcclInTheCapture) {
  if (!loopback_possible()) GTEST_SKIP() << "graphs need the NCCL transport; loopback one rank";
  auto b = backend(true, true);
  verify_all(*b, 2, DType::fp32, {"baseline", "slicing:2", "decompose", "flash:2", "flash_direct"});
}

// Keeps every iteration's times as the backend reported them.
class KeepsTimes : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  IterationTimes finish(double timeout_s) override {
    kept.push_back(inner_.finish(timeout_s));
    return kept.back();
  }
  std::vector<IterationTimes> kept;
};

TEST_F(Gpu, TaskTimesComeFromEventsAndRespectDependencies) {
  const bool loopback = loopback_possible();
  auto inner = backend(loopback);
  KeepsTimes b(*inner);
  Executor executor(b, MPI_COMM_WORLD);
  const int n = loopback ? 2 : world;
  // On one rank without loopback (moe) flash has nothing to exchange; baseline's collectives
  // still run on the comm stream.
  const char* strategy = n == 1 ? "baseline" : "flash";
  Plan p = make_plan(gpu_case(strategy, n, DType::fp32, loopback), loopback ? 0 : rank);
  CaseResult r = executor.run_case(p, options(), "times");
  EXPECT_EQ(r.verified, 1);
  // Host-staged transfers are timed on the host clock, GEMMs by GPU events: a dependency across
  // the two clocks is ordered within their alignment, which the backend measures every
  // iteration (the widest of any rank's), plus the events' resolution.
  double alignment = 0;
  for (const IterationTimes& t : b.kept) alignment = std::max(alignment, t.host_alignment);
  MPI_Allreduce(MPI_IN_PLACE, &alignment, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (g_transport != "mpi") {
    EXPECT_EQ(alignment, 0.0);
  }
  const double slack = 1e-6 + alignment;
  if (rank != 0) return;
  const int T = r.max_tasks;
  int transfers = 0;
  for (int it = 0; it < r.iters; ++it) {
    for (int rk = 0; rk < world; ++rk) {
      auto at = [&](int t) { return (static_cast<size_t>(it) * world + rk) * T + t; };
      for (int t = 0; t < T; ++t) {
        if (r.tasks[rk * T + t].task < 0) continue;
        if (it == 0 && r.tasks[rk * T + t].stream == static_cast<int8_t>(StreamId::comm)) {
          ++transfers;
        }
        EXPECT_TRUE(std::isfinite(r.task_start[at(t)]) && std::isfinite(r.task_end[at(t)]));
        EXPECT_LE(r.task_start[at(t)], r.task_end[at(t)]);
      }
      for (const DepRecord& d : r.deps) {
        if (d.rank == rk) {
          EXPECT_GE(r.task_start[at(d.task)], r.task_end[at(d.on)] - slack);
        }
      }
    }
  }
  EXPECT_GT(transfers, 0) << "no transfer ran: the comm stream was not exercised";
}

// CUPTI kernel activity: an interval for every task of every iteration, the captured one with
// --graphs included (replayed kernels are found through the graph nodes each task created when
// it was captured), no per-task timing events beside it (CUPTI times the tasks, so none is
// recorded), the kernels of one stream never overlapping each other, and every task starting
// after what it depends on ended, on the GPU's one clock.
TEST_F(Gpu, CuptiTimesEveryTaskWithoutTimingEvents) {
  if (!loopback_possible()) GTEST_SKIP() << "checked at one rank over NCCL, with loopback";
  for (bool graphs : {false, true}) {
    auto inner = backend(true, graphs);
    ASSERT_NE(inner->timer().find("cupti"), std::string::npos)
        << "CUPTI is not timing the tasks: " << inner->timer();
    KeepsTimes b(*inner);
    Executor executor(b, MPI_COMM_WORLD);
    Plan p = make_plan(gpu_case("flash", 2, DType::fp32, true), 0);
    CaseResult r = executor.run_case(p, options(), "cupti");
    EXPECT_EQ(r.verified, 1);
    ASSERT_FALSE(b.kept.empty());
    // Every timed iteration was CUPTI's, and the case says so; a fallback would say "mixed".
    EXPECT_EQ(r.timer_text(), inner->timer()) << (graphs ? "graphs" : "eager");
    // CUDA events resolve to about 0.5 us; CUPTI's timestamps are nanoseconds of one clock.
    constexpr double kClockSlack = 1e-9;
    for (const IterationTimes& t : b.kept) {
      EXPECT_NE(t.timer.find("cupti"), std::string::npos) << t.timer;
      EXPECT_TRUE(t.stream_start.empty()) << "per-task timing events were recorded";
      double stream_end[kNumStreams] = {-1, -1};
      for (const Task& task : p.tasks) {
        const size_t i = task.id;
        const std::string what = task.label + (graphs ? " (graphs)" : "");
        ASSERT_TRUE(std::isfinite(t.start[i]) && std::isfinite(t.end[i])) << what;
        EXPECT_LE(t.start[i], t.end[i]) << what;
        double& last = stream_end[static_cast<int>(task.stream)];
        EXPECT_GE(t.start[i], last - kClockSlack) << what << " overlaps the task before it";
        last = t.end[i];
        for (int d : task.deps) EXPECT_GE(t.start[i], t.end[d] - kClockSlack) << what;
      }
    }
  }
}

// What every strategy gets alike (docs/fairness.md), as the backend reports it and
// the device shows it, in loopback on one rank: the bundle's `fairness` step runs these.
struct Fairness : Gpu {
  // The case's facts of rank 0 ("key=value"), by key.
  static std::map<std::string, std::string> facts_of(const CaseResult& r) {
    std::map<std::string, std::string> out;
    for (const HardwareFact& f : parse_facts(r.facts)) {
      if (f.rank == 0) out[f.key] = f.value;
    }
    return out;
  }
  std::vector<CaseResult> run(const std::vector<std::string>& strategies, bool graphs = false) {
    auto inner = backend(true, graphs);
    Executor executor(*inner, MPI_COMM_WORLD);
    std::vector<Plan> plans;
    for (const std::string& s : strategies)
      plans.push_back(make_plan(gpu_case(s, 2, DType::fp32, true), 0));
    std::vector<const Plan*> ptrs;
    std::vector<std::string> ids;
    for (const Plan& p : plans) {
      ptrs.push_back(&p);
      ids.push_back(p.strategy.text);
    }
    ExecOptions o = options();
    o.rounds = 2;
    return executor.run_cases(ptrs, ids, o);
  }
};

int leading_int(const std::string& text) {
  return std::atoi(text.c_str());
}

// The references' collectives run on NCCL's own CTA limits, an overlapping strategy's transfers
// on the communicator capped at --comm-sms, and each knows how many channels it got.
TEST_F(Fairness, ReferenceCollectivesUncappedOverlappingCapped) {
  if (!loopback_possible()) GTEST_SKIP() << "checked at one rank over NCCL, with loopback";
  const auto cases = run({"comm_only", "baseline", "flash"});
  for (const CaseResult& r : cases) {
    const auto f = facts_of(r);
    // mlp_bwd's baseline gathers X again beside dX's GEMM: an overlapping plan too.
    const bool overlapping =
        plan_overlaps(make_plan(gpu_case(r.strategy, 2, DType::fp32, true), 0));
    EXPECT_EQ(f.at("nccl_communicator"), overlapping ? "capped" : "reference") << r.strategy;
    EXPECT_EQ(f.at("nccl_cta_limit").find("maxCTAs") != std::string::npos, overlapping)
        << r.strategy << ": " << f.at("nccl_cta_limit");
    EXPECT_NE(f.at("nccl_coll_channels"), "not reported") << r.strategy;
  }
  // comm_only's communicator is the reference one, flash's the capped one.
  const int reference = leading_int(facts_of(cases[0]).at("nccl_coll_channels"));
  const int capped = leading_int(facts_of(cases[2]).at("nccl_coll_channels"));
  EXPECT_GE(reference, capped);
}

// Every plan buffer is registered with the communicator that moves it.
TEST_F(Fairness, EveryBufferIsRegistered) {
  if (!loopback_possible()) GTEST_SKIP() << "checked at one rank over NCCL, with loopback";
  for (const CaseResult& r : run({"baseline", "slicing:2", "flash"})) {
    const Plan plan = make_plan(gpu_case(r.strategy, 2, DType::fp32, true), 0);
    EXPECT_EQ(leading_int(facts_of(r).at("nccl_registered")), static_cast<int>(plan.buffers.size()))
        << r.strategy;
  }
}

// A timed iteration starts on the device after its last launch, and the host's launch time is
// recorded beside its step, eager and replayed alike.
TEST_F(Fairness, TimedIterationsStartAfterTheirLastLaunch) {
  if (!loopback_possible()) GTEST_SKIP() << "checked at one rank over NCCL, with loopback";
  for (bool graphs : {false, true}) {
    for (const CaseResult& r : run({"baseline", "flash"}, graphs)) {
      EXPECT_NE(facts_of(r).at("launch_gate").find("after their last launch"), std::string::npos)
          << facts_of(r).at("launch_gate");
      ASSERT_EQ(r.launch_seconds.size(), static_cast<size_t>(r.iters));
      for (double t : r.launch_seconds) EXPECT_TRUE(std::isfinite(t) && t > 0) << r.strategy;
      for (const std::string& timer : r.timers) {
        EXPECT_EQ(timer.find(kGateOpenedEarly), std::string::npos) << timer;
      }
    }
  }
}

// Only the GEMMs a transfer may run beside leave SMs to NCCL; the case says how many.
TEST_F(Fairness, SmTargetOnlyBesideTransfers) {
  if (!loopback_possible()) GTEST_SKIP() << "checked at one rank over NCCL, with loopback";
  for (const CaseResult& r : run({"baseline", "flash"})) {
    const Plan plan = make_plan(gpu_case(r.strategy, 2, DType::fp32, true), 0);
    int beside = 0;
    const std::vector<char> marked = tasks_beside_transfers(plan);
    for (const Task& t : plan.tasks) beside += t.kind == TaskKind::gemm && marked[t.id];
    EXPECT_EQ(leading_int(facts_of(r).at("gemm_sm_target")), beside) << r.strategy;
    // A plan that never overlaps (baseline, but mlp_bwd's) runs every GEMM on every SM.
    if (!plan_overlaps(plan)) {
      EXPECT_EQ(beside, 0) << r.strategy;
    }
  }
}

// The timed iterations run on normal data; verification on the integers, read back from the
// device both times.
TEST_F(Fairness, TimedDataDifferFromVerifiedData) {
  if (!loopback_possible()) GTEST_SKIP() << "checked at one rank over NCCL, with loopback";
  auto b = backend(true);
  const Plan plan = make_plan(gpu_case("flash", 2, DType::fp32, true), 0);
  b->setup(plan);
  const InputRegion& region = plan.inputs.front();
  const int64_t cols = plan.buffers[region.buffer].cols;
  // How many of the region's elements hold integers.
  auto integers = [&] {
    const std::vector<double> all = b->read(plan, region.buffer);
    int n = 0;
    for (int64_t i = region.row * cols; i < (region.row + region.rows) * cols; ++i) {
      n += all[i] == std::round(all[i]);
    }
    return n;
  };
  b->poison(plan);
  const int verified = integers();
  b->fill_timing_data(plan);
  const int timed = integers();
  b->poison(plan);
  EXPECT_EQ(integers(), verified);
  b->release(plan);
  const auto size = static_cast<int>(region.rows * cols);
  EXPECT_EQ(verified, size);
  EXPECT_LT(timed, size / 100) << "the timed data are integers as the verified ones";
}

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    for (int i = 1; i < argc; ++i) {
      if (std::strncmp(argv[i], "--transport=", 12) == 0) fob::g_transport = argv[i] + 12;
      if (std::strcmp(argv[i], "--small") == 0) fob::g_small = true;
      if (std::strncmp(argv[i], "--workload=", 11) == 0) {
        fob::g_workload = fob::parse_workload(argv[i] + 11);
      }
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "%s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  const fob::CudaStatus status = fob::cuda_status();
  if (!status.loaded || status.devices == 0) {
    const std::string why = status.error.empty() ? "no CUDA device visible" : status.error;
    if (status.gpu_present) {
      // A machine with an NVIDIA driver whose GPU the backend cannot use (a driver older than
      // the runtime, a missing library) must not pass as "skipped".
      if (rank == 0)
        std::fprintf(stderr, "FAIL: an NVIDIA driver is present but %s\n", why.c_str());
      MPI_Finalize();
      return 1;
    }
    if (rank == 0)
      std::printf("no GPU on this machine (%s): skipping the gpu tests\n", why.c_str());
    MPI_Finalize();
    return fob::kSkip;
  }
  // Transport ce copies between the GPUs of several ranks: a machine with fewer GPUs than ranks
  // cannot run it (the backend refuses two ranks on one GPU).
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (fob::g_transport == "ce" && status.devices < world) {
    if (rank == 0) {
      std::printf("transport ce needs a GPU per rank: %d rank(s), %d GPU(s): skipping\n", world,
                  status.devices);
    }
    MPI_Finalize();
    return fob::kSkip;
  }
  if (rank == 0) {
    std::printf("%s workload, %s transport: %s\n", fob::to_string(fob::g_workload),
                fob::g_transport.c_str(), fob::cuda_versions().c_str());
  }
  const int failed = fob::run_tests_on_every_rank();
  MPI_Finalize();
  return failed;
}
