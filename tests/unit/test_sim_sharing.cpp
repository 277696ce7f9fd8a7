// The simulator's bandwidth sharing (messages on one port share it, classes and exchanges do not)
// and its interference terms (a transfer slowed while its rank computes, launch overheads), on
// hand-built plans whose times are exact.
#include "sim_closed_forms.h"

namespace fob::sim_test {
namespace {

// Bandwidth sharing. Hand-built plans: B bytes take exactly 1/1024 s alone at kBw.
const double kBw = 1024.0 * 1024.0;
const int64_t kB = 1024;
const double kT = 1.0 / 1024;  // kB / kBw

// A cost model whose link class is chosen by a function of the pair; free compute.
class ClassCost : public CostModel {
 public:
  ClassCost(double latency, int (*cls)(int, int)) : latency_(latency), cls_(cls) {}
  double compute_seconds(const Task&, DType, int) const override { return 0; }
  double transfer_seconds(int64_t bytes, int, int) const override {
    return latency_ + static_cast<double>(bytes) / kBw;
  }
  double latency_seconds(int, int) const override { return latency_; }
  double bytes_per_second(int, int) const override { return kBw; }
  int link_class(int from, int to) const override { return cls_(from, to); }

 private:
  double latency_;
  int (*cls_)(int, int);
};

int class_by_receiver_parity(int, int to) {
  return to % 2;
}
int class_everywhere(int, int) {
  return 0;
}
int class_per_pair(int from, int to) {
  return from * 4096 + to;
}

// Another model's times; subclasses change one aspect of it.
class Forwarding : public CostModel {
 public:
  explicit Forwarding(const CostModel& base) : base_(base) {}
  double compute_seconds(const Task& t, DType d, int rank) const override {
    return base_.compute_seconds(t, d, rank);
  }
  double transfer_seconds(int64_t bytes, int from, int to) const override {
    return base_.transfer_seconds(bytes, from, to);
  }
  double latency_seconds(int from, int to) const override {
    return base_.latency_seconds(from, to);
  }
  double bytes_per_second(int from, int to) const override {
    return base_.bytes_per_second(from, to);
  }

 private:
  const CostModel& base_;
};

// Every ordered pair of ranks on a class of its own.
class PerPairCost : public Forwarding {
 public:
  using Forwarding::Forwarding;
  int link_class(int from, int to) const override { return class_per_pair(from, to); }
};

std::vector<Plan> empty_plans(int world) {
  Plan base = plans_for(find_workload("ag_gemm"), "baseline", 2).front();
  base.tasks.clear();
  std::vector<Plan> plans(static_cast<size_t>(world), base);
  for (int r = 0; r < world; ++r) {
    plans[static_cast<size_t>(r)].rank = r;
    plans[static_cast<size_t>(r)].world = world;
  }
  return plans;
}

// Appends a transfer to `p` (no deps beyond its stream's previous task); returns its id.
int add_transfer(Plan& p, StreamId stream, TaskKind kind, int to, int from, int64_t bytes,
                 int tag = 0) {
  Task t;
  t.id = static_cast<int>(p.tasks.size());
  t.stream = stream;
  t.kind = kind;
  t.send_peer = to;
  t.recv_peer = from;
  t.bytes = bytes;
  t.tag = tag;
  t.label = "t" + std::to_string(t.id);
  p.tasks.push_back(t);
  return t.id;
}

double start_of(const CaseResult& r, int rank, int task) {
  return r.task_start[static_cast<size_t>(rank) * static_cast<size_t>(r.max_tasks) +
                      static_cast<size_t>(task)];
}

double end_of(const CaseResult& r, int rank, int task) {
  return r.task_end[static_cast<size_t>(rank) * static_cast<size_t>(r.max_tasks) +
                    static_cast<size_t>(task)];
}

// Rank 0 sends `first` bytes to rank 1 and `second` bytes to rank 2 at once (one per stream).
std::vector<Plan> two_sends_from_zero(int64_t first, int64_t second) {
  std::vector<Plan> plans = empty_plans(3);
  add_transfer(plans[0], StreamId::compute, TaskKind::send, 1, -1, first);
  add_transfer(plans[0], StreamId::comm, TaskKind::send, 2, -1, second);
  add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, first);
  add_transfer(plans[2], StreamId::comm, TaskKind::recv, -1, 0, second);
  return plans;
}

TEST(SimShare, OneMessageAloneIsUnchanged) {
  const double lat = 1.0 / 65536;
  std::vector<Plan> plans = empty_plans(2);
  add_transfer(plans[0], StreamId::comm, TaskKind::send, 1, -1, kB);
  add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, kB);
  const CaseResult r = simulate_case(plans, UniformCost(1, kInf, lat, kBw), "0");
  EXPECT_CLOSE(end_of(r, 0, 0), lat + kT);
  EXPECT_CLOSE(end_of(r, 1, 0), lat + kT);
}

// Two messages leaving one rank over one class each get half its egress: lat + 2 B / bw.
TEST(SimShare, TwoSendsFromOneRankShareEgress) {
  const double lat = 1.0 / 65536;
  const CaseResult r =
      simulate_case(two_sends_from_zero(kB, kB), UniformCost(1, kInf, lat, kBw), "0");
  EXPECT_CLOSE(end_of(r, 0, 0), lat + 2 * kT);
  EXPECT_CLOSE(end_of(r, 0, 1), lat + 2 * kT);
  EXPECT_CLOSE(end_of(r, 1, 0), lat + 2 * kT);
  EXPECT_CLOSE(end_of(r, 2, 0), lat + 2 * kT);
  EXPECT_CLOSE(r.step(0), lat + 2 * kT);
}

// B and 3B at once: both flow at bw/2 until the small one ends at 2B/bw; the large one has 2B
// left, alone at bw: it ends at 4B/bw.
TEST(SimShare, RatesRiseWhenAMessageFinishes) {
  const double lat = 1.0 / 65536;
  const CaseResult r =
      simulate_case(two_sends_from_zero(kB, 3 * kB), UniformCost(1, kInf, lat, kBw), "0");
  EXPECT_CLOSE(end_of(r, 0, 0), lat + 2 * kT);
  EXPECT_CLOSE(end_of(r, 0, 1), lat + 4 * kT);
  EXPECT_CLOSE(end_of(r, 2, 0), lat + 4 * kT);
}

// Ranks 1 and 2 send to rank 0 at once: they share rank 0's ingress.
TEST(SimShare, TwoReceivesShareIngress) {
  std::vector<Plan> plans = empty_plans(3);
  add_transfer(plans[0], StreamId::compute, TaskKind::recv, -1, 1, kB);
  add_transfer(plans[0], StreamId::comm, TaskKind::recv, -1, 2, kB);
  add_transfer(plans[1], StreamId::comm, TaskKind::send, 0, -1, kB);
  add_transfer(plans[2], StreamId::comm, TaskKind::send, 0, -1, kB);
  const CaseResult r = simulate_case(plans, UniformCost(1, kInf, 0, kBw), "0");
  EXPECT_CLOSE(end_of(r, 0, 0), 2 * kT);
  EXPECT_CLOSE(end_of(r, 0, 1), 2 * kT);
}

// Different link classes (receiver parity: 0 -> 1 is class 1, 0 -> 2 class 0) do not share.
TEST(SimShare, DifferentClassesDoNotShare) {
  const double lat = 1.0 / 65536;
  const CaseResult r =
      simulate_case(two_sends_from_zero(kB, kB), ClassCost(lat, class_by_receiver_parity), "0");
  EXPECT_CLOSE(end_of(r, 0, 0), lat + kT);
  EXPECT_CLOSE(end_of(r, 0, 1), lat + kT);
  // Same parity (0 -> 1 and 0 -> 3, both class 1): shared.
  std::vector<Plan> plans = empty_plans(4);
  add_transfer(plans[0], StreamId::compute, TaskKind::send, 1, -1, kB);
  add_transfer(plans[0], StreamId::comm, TaskKind::send, 3, -1, kB);
  add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, kB);
  add_transfer(plans[3], StreamId::comm, TaskKind::recv, -1, 0, kB);
  const CaseResult s = simulate_case(plans, ClassCost(lat, class_by_receiver_parity), "0");
  EXPECT_CLOSE(end_of(s, 0, 0), lat + 2 * kT);
  EXPECT_CLOSE(end_of(s, 0, 1), lat + 2 * kT);
}

// An exchange sends one way and receives the other: egress and ingress are separate, so a
// pair swapping blocks, or a ring shifting them, runs at full rate.
TEST(SimShare, ExchangeDoesNotShare) {
  for (int n : {2, 3, 8}) {
    std::vector<Plan> plans = empty_plans(n);
    for (int r = 0; r < n; ++r) {
      add_transfer(plans[static_cast<size_t>(r)], StreamId::comm, TaskKind::exchange, (r + 1) % n,
                   (r + n - 1) % n, kB);
    }
    const CaseResult res = simulate_case(plans, UniformCost(1, kInf, 0, kBw), "0");
    for (int r = 0; r < n; ++r) EXPECT_CLOSE(end_of(res, r, 0), kT) << n;
  }
}

// A message sent while a collective runs on the same class shares the sender's egress with it.
// N = 3: the all-gather's ring (0 -> 1 -> 2 -> 0) takes 2 steps of a B-byte block (2B/bw
// alone). Rank 0 also sends B to rank 2. Sharing rank 0's egress, the message flows at bw/2
// and ends at 2B/bw; the collective's steps take 2B/bw each meanwhile, so half of it is done,
// and the other half, alone, takes B/bw more: 3B/bw. With a class per pair nothing shares.
TEST(SimShare, MessagesShareWithCollectives) {
  for (bool same_class : {true, false}) {
    std::vector<Plan> plans = empty_plans(3);
    for (Plan& p : plans) {
      const int c = add_transfer(p, StreamId::comm, TaskKind::collective, -1, -1, 2 * kB);
      p.tasks[static_cast<size_t>(c)].op = CollectiveOp::all_gather;
    }
    add_transfer(plans[0], StreamId::compute, TaskKind::send, 2, -1, kB);
    add_transfer(plans[2], StreamId::compute, TaskKind::recv, -1, 0, kB);
    const CaseResult r = same_class ? simulate_case(plans, ClassCost(0, class_everywhere), "0")
                                    : simulate_case(plans, ClassCost(0, class_per_pair), "0");
    EXPECT_CLOSE(end_of(r, 0, 1), (same_class ? 2 : 1) * kT) << same_class;
    EXPECT_CLOSE(end_of(r, 2, 1), (same_class ? 2 : 1) * kT) << same_class;
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_CLOSE(end_of(r, rank, 0), (same_class ? 3 : 2) * kT) << same_class;
    }
  }
}

// Strategies whose ranks never have two messages on one port at once time exactly the same
// whether all pairs share one class or every pair has its own (so nothing can share).
TEST(SimShare, OneMessagePerPortStrategiesUnchanged) {
  const double g = 1.0 / 1024, c = 1.0 / 2048;
  for (int n : {2, 4, 8, 16}) {
    const UniformCost shared = cost_for(n, g, c);
    const PerPairCost alone(shared);
    for (const char* spec : {"baseline", "slicing:4", "decompose", "flash", "flash:4",
                             "flash_direct", "flash_direct:4"}) {
      for (Workload w :
           {find_workload("ag_gemm"), find_workload("gemm_rs"), find_workload("mlp")}) {
        const std::vector<Plan> plans = plans_for(w, spec, n);
        EXPECT_EQ(simulate_case(plans, shared, "0").step(0),
                  simulate_case(plans, alone, "0").step(0))
            << n << " " << spec;
      }
    }
  }
}

// flash_direct on ag_gemm has flash's closed form: exchange k meets its peers' exchange k, one
// message out and one in per rank at a time.
TEST(SimShare, FlashDirectAllGather) {
  for (int n : kWorlds) {
    for (int m : {1, 4}) {
      for (Regime r : kRegimes) {
        const std::string spec = "flash_direct:" + std::to_string(m);
        const double want = std::max(n * r.g, (n - 1) * r.c + r.g / m);
        EXPECT_CLOSE(simulated_step(find_workload("ag_gemm"), spec, n, r.g, r.c), want)
            << n << spec;
      }
    }
  }
}

// Transfers that slow down under compute and wait to be posted while their rank computes, and
// launch overheads per stream.
class Interfering : public Forwarding {
 public:
  Interfering(const CostModel& base, double transfer_slowdown, double delay,
              double launch_compute = 0, double launch_comm = 0)
      : Forwarding(base),
        transfer_slowdown_(transfer_slowdown),
        delay_(delay),
        launch_compute_(launch_compute),
        launch_comm_(launch_comm) {}
  double transfer_slowdown_while_computing() const override { return transfer_slowdown_; }
  double comm_start_delay_while_computing() const override { return delay_; }
  double launch_seconds(StreamId stream) const override {
    return stream == StreamId::compute ? launch_compute_ : launch_comm_;
  }

 private:
  double transfer_slowdown_, delay_, launch_compute_, launch_comm_;
};

// Appends a GEMM of `flops` on the compute stream of `p`; returns its id.
int add_gemm(Plan& p, double flops) {
  Task t;
  t.id = static_cast<int>(p.tasks.size());
  t.kind = TaskKind::gemm;
  t.flops = flops;
  t.label = "g" + std::to_string(t.id);
  p.tasks.push_back(t);
  return t.id;
}

// Rank 0 computes for 2T while it sends 2B (2T alone) to rank 1. At 1.5x under compute the
// message moves 2B/3 in the first 2T and the remaining 4B/3 alone: it ends at 2T + 4T/3. A
// latency is paid before flowing, at full speed.
TEST(SimInterference, TransferSlowsWhileItsRankComputes) {
  const double lat = 1.0 / 65536;
  std::vector<Plan> plans = empty_plans(2);
  add_gemm(plans[0], 2 * kT);  // 1 flop/s: 2T seconds
  add_transfer(plans[0], StreamId::comm, TaskKind::send, 1, -1, 2 * kB);
  add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, 2 * kB);
  const UniformCost base(1, kInf, lat, kBw);
  const CaseResult plain = simulate_case(plans, base, "0");
  EXPECT_CLOSE(end_of(plain, 0, 1), lat + 2 * kT);
  const CaseResult slowed = simulate_case(plans, Interfering(base, 1.5, 0), "0");
  // (2T - lat) of flowing under compute at bw / 1.5, then the rest alone.
  const double moved = (2 * kT - lat) / 1.5;
  EXPECT_CLOSE(end_of(slowed, 0, 1), 2 * kT + (2 * kT - moved));
  EXPECT_CLOSE(end_of(slowed, 1, 0), end_of(slowed, 0, 1));
  EXPECT_CLOSE(end_of(slowed, 0, 0), 2 * kT) << "the GEMM itself is unchanged";
}

// A ring all-gather on 2 ranks is one step of one block: 1.5x slower while either rank
// computes, so a collective wholly under a long GEMM on rank 1 takes 1.5 times as long.
TEST(SimInterference, CollectiveSlowsWhileAnyRingRankComputes) {
  const int n = 2;
  const double g = 1.0 / 1024, c = 1.0 / 4096;
  const UniformCost base = cost_for(n, g, c);
  std::vector<Plan> plans = plans_for(find_workload("ag_gemm"), "comm_only", n);
  const double ring = simulate_case(plans, base, "0").step(0);
  Task& gemm = plans[1].tasks.emplace_back();
  gemm.id = static_cast<int>(plans[1].tasks.size()) - 1;
  gemm.kind = TaskKind::gemm;
  gemm.flops = 1e30;  // longer than anything: rank 1 computes throughout
  gemm.label = "long";
  const CaseResult r = simulate_case(plans, Interfering(base, 1.5, 0), "0");
  EXPECT_CLOSE(end_of(r, 0, 0), 1.5 * ring);
}

// A transfer ready while its rank computes is posted `delay` later, or when the compute task
// ends if sooner; one ready while its rank is idle is posted at once.
TEST(SimInterference, CommStartWaitsWhileItsRankComputes) {
  std::vector<Plan> plans = empty_plans(2);
  add_gemm(plans[0], 4 * kT);
  add_transfer(plans[0], StreamId::comm, TaskKind::send, 1, -1, kB);
  add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, kB);
  const UniformCost base(1, kInf, 0, kBw);
  const CaseResult waited = simulate_case(plans, Interfering(base, 1, kT), "0");
  EXPECT_CLOSE(start_of(waited, 0, 1), kT);
  EXPECT_CLOSE(end_of(waited, 0, 1), 2 * kT);
  EXPECT_CLOSE(start_of(waited, 1, 0), 0.0) << "rank 1 computes nothing: posted at once";
  const CaseResult clipped = simulate_case(plans, Interfering(base, 1, 10 * kT), "0");
  EXPECT_CLOSE(start_of(clipped, 0, 1), 4 * kT) << "posted when the GEMM ends";
  EXPECT_CLOSE(end_of(clipped, 0, 1), 5 * kT);
  std::vector<Plan> idle = empty_plans(2);
  add_transfer(idle[0], StreamId::comm, TaskKind::send, 1, -1, kB);
  add_transfer(idle[1], StreamId::comm, TaskKind::recv, -1, 0, kB);
  EXPECT_CLOSE(end_of(simulate_case(idle, Interfering(base, 1, kT), "0"), 0, 0), kT);
}

// With launch overheads too, whether the rank computes is decided when the transfer is ready
// (as calibrate sees it), a compute task still launching then counting, and the delay follows
// the transfer's launch: ready at 0 beside a 4T GEMM, a send is posted at L + T, or when the
// GEMM ends if sooner, but never before its launch is over.
TEST(SimInterference, CommStartDelayFollowsTheLaunch) {
  const double lm = kT / 4;
  auto send_beside_gemm = [&](double gemm_seconds, double delay, double launch_compute) {
    std::vector<Plan> plans = empty_plans(2);
    add_gemm(plans[0], gemm_seconds);
    add_transfer(plans[0], StreamId::comm, TaskKind::send, 1, -1, kB);
    add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, kB);
    const UniformCost base(1, kInf, 0, kBw);
    return start_of(simulate_case(plans, Interfering(base, 1, delay, launch_compute, lm), "0"), 0,
                    1);
  };
  EXPECT_CLOSE(send_beside_gemm(4 * kT, kT, 0), lm + kT);
  EXPECT_CLOSE(send_beside_gemm(4 * kT, kT, 2 * lm), lm + kT) << "the GEMM launches till 2L";
  EXPECT_CLOSE(send_beside_gemm(4 * kT, 10 * kT, 0), 4 * kT) << "posted when the GEMM ends";
  EXPECT_CLOSE(send_beside_gemm(4 * kT, 10 * kT, 2 * lm), 2 * lm + 4 * kT);
  EXPECT_CLOSE(send_beside_gemm(kT / 8, kT, 0), lm) << "the GEMM ended during the launch";
}

// Every task starts its stream's launch overhead after it is ready: two GEMMs in a row end at
// 2 (L + T); a message starts when the later of its two launched halves is posted.
TEST(SimInterference, LaunchOverheadPerTask) {
  std::vector<Plan> plans = empty_plans(2);
  add_gemm(plans[0], kT);
  add_gemm(plans[0], kT);
  add_transfer(plans[0], StreamId::comm, TaskKind::send, 1, -1, kB);
  add_transfer(plans[1], StreamId::comm, TaskKind::recv, -1, 0, kB);
  const UniformCost base(1, kInf, 0, kBw);
  const double lc = kT / 8, lm = kT / 4;
  const CaseResult r = simulate_case(plans, Interfering(base, 1, 0, lc, lm), "0");
  EXPECT_CLOSE(start_of(r, 0, 0), lc);
  EXPECT_CLOSE(end_of(r, 0, 1), 2 * (lc + kT));
  EXPECT_CLOSE(start_of(r, 0, 2), lm);
  EXPECT_CLOSE(end_of(r, 1, 0), lm + kT);
}

// Every strategy that applies to mlp at 64 ranks with 16 slices. Prints the time (the project
// does not time unit tests; this is for quoting).

}  // namespace
}  // namespace fob::sim_test
