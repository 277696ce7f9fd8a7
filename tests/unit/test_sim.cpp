// The simulator against closed forms derived from the plans' structure. Rates are chosen so that
// one rank-block's GEMM takes exactly g and one block's message exactly c (powers of two, so the
// arithmetic is exact); element-wise tasks are free and latency is 0 unless a test says so.
#include "sim_closed_forms.h"

namespace fob::sim_test {
namespace {

TEST(Sim, BaselineIsComputePlusRing) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      const double want = n * r.g + (n - 1) * r.c;
      EXPECT_CLOSE(simulated_step(find_workload("ag_gemm"), "baseline", n, r.g, r.c), want) << n;
      EXPECT_CLOSE(simulated_step(find_workload("gemm_rs"), "baseline", n, r.g, r.c), want) << n;
      EXPECT_CLOSE(simulated_step(find_workload("mlp"), "baseline", n, r.g, r.c), 2 * want) << n;
    }
  }
}

TEST(Sim, ReferenceModes) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      for (Workload w : {find_workload("ag_gemm"), find_workload("gemm_rs")}) {
        EXPECT_CLOSE(simulated_step(w, "compute_only", n, r.g, r.c), n * r.g);
        EXPECT_CLOSE(simulated_step(w, "comm_only", n, r.g, r.c), (n - 1) * r.c);
      }
      EXPECT_CLOSE(simulated_step(find_workload("mlp"), "compute_only", n, r.g, r.c), 2 * n * r.g);
      EXPECT_CLOSE(simulated_step(find_workload("mlp"), "comm_only", n, r.g, r.c),
                   2 * (n - 1) * r.c);
    }
  }
}

// slicing:C on ag_gemm: chunk j's all-gather (a = (N-1)c/C) runs back to back on the comm
// stream, chunk j's GEMM (b = Ng/C) waits for it. The last GEMM ends at
// max_k (k+1)a + (C-k)b = max(a + Cb, Ca + b): with c <= g only the first chunk's all-gather
// is exposed. gemm_rs is the mirror image (GEMM first, then its reduce-scatter).
TEST(Sim, SlicingExposesOneChunk) {
  for (int n : kWorlds) {
    for (int chunks : {1, 2, 4, 16}) {
      for (Regime r : kRegimes) {
        const double a = (n - 1) * r.c / chunks, b = n * r.g / chunks;
        const double want = std::max(a + chunks * b, chunks * a + b);
        const std::string spec = "slicing:" + std::to_string(chunks);
        EXPECT_CLOSE(simulated_step(find_workload("ag_gemm"), spec, n, r.g, r.c), want)
            << n << spec;
        EXPECT_CLOSE(simulated_step(find_workload("gemm_rs"), spec, n, r.g, r.c), want)
            << n << spec;
        if (r.c <= r.g) {
          EXPECT_CLOSE(want, n * r.g + (n - 1) * r.c / chunks);
        }
      }
    }
  }
}

// flash:m on ag_gemm. The comm stream forwards sub-slices back to back (exchange j, in stream
// order, ends at (j+1)c/m on every rank: each waits only for the one it forwards, which arrived
// earlier). Compute j (j = km + i, g/m each) needs exchange j-m, so it can start at
// (j-m+1)c/m for j >= m. The last GEMM ends at max_j ready_j + (Nm-j)g/m, linear in j, so
//   step = max(N g, (N-1) c + g/m).
// When c <= g that is N g: nothing exposed. Otherwise the exposure is
// (N-1)(c - g) - (1 - 1/m) g: every forward waits c - g past the compute it hides, and the last
// sub-slice's compute (g/m, not a whole slice g) follows the last transfer.
TEST(Sim, FlashAllGatherExposesNothingWhenTransferIsFaster) {
  for (int n : kWorlds) {
    for (int m : {1, 2, 4, 16}) {
      for (Regime r : kRegimes) {
        const std::string spec = "flash:" + std::to_string(m);
        const double want = std::max(n * r.g, (n - 1) * r.c + r.g / m);
        EXPECT_CLOSE(simulated_step(find_workload("ag_gemm"), spec, n, r.g, r.c), want)
            << n << spec;
      }
    }
  }
}

// flash on gemm_rs (m = 1): step 0's partial (g) has no transfer; step k >= 1 exchanges the
// running sum (c) while computing its partial (g), and the add (free) needs both; the next
// exchange sends that sum and the next partial reuses `part`, so the steps lock:
//   step = g + (N-1) max(g, c)   -> N g when c <= g, N g + (N-1)(c - g) otherwise.
// With m > 1 sub-slices and c <= g the same argument per sub-slice gives N g.
TEST(Sim, FlashReduceScatter) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      EXPECT_CLOSE(simulated_step(find_workload("gemm_rs"), "flash", n, r.g, r.c),
                   r.g + (n - 1) * std::max(r.g, r.c))
          << n;
      if (r.c <= r.g) {
        for (int m : {2, 4, 16}) {
          const std::string spec = "flash:" + std::to_string(m);
          EXPECT_CLOSE(simulated_step(find_workload("gemm_rs"), spec, n, r.g, r.c), n * r.g)
              << spec;
        }
      }
    }
  }
}

// decompose, lock-stepped: on ag_gemm, step k's exchange waits for step k-1's GEMM and
// exchange, so each of the first N-1 steps takes max(g, c) and the last is a GEMM alone:
//   step = (N-1) max(g, c) + g.
// On gemm_rs all N steps exchange (step 0 sends zeros) and each waits for the previous add:
//   step = N max(g, c).
TEST(Sim, DecomposeLockStep) {
  for (int n : kWorlds) {
    for (Regime r : kRegimes) {
      const double s = std::max(r.g, r.c);
      EXPECT_CLOSE(simulated_step(find_workload("ag_gemm"), "decompose", n, r.g, r.c),
                   (n - 1) * s + r.g)
          << n;
      EXPECT_CLOSE(simulated_step(find_workload("gemm_rs"), "decompose", n, r.g, r.c), n * s) << n;
    }
  }
}

TEST(Sim, LatencyAddsPerMessage) {
  // Baseline: every ring step pays the latency once.
  const int n = 8;
  const double g = 1.0 / 1024, c = 1.0 / 4096, lat = 1.0 / 65536;
  const CaseResult res = simulate_case(plans_for(find_workload("ag_gemm"), "baseline", n),
                                       cost_for(n, g, c, lat), "0");
  EXPECT_CLOSE(res.step(0), n * g + (n - 1) * (c + lat));
}

TEST(Sim, ContentionSlowsComputeStartedDuringTransfer) {
  // Baseline has no overlap, so the factor changes nothing; flash's first GEMM starts with the
  // first exchange in flight, so it is slowed.
  const int n = 4;
  const double g = 1.0 / 1024, c = 1.0 / 4096;
  const UniformCost base = cost_for(n, g, c);
  const Shape s = test_shape();
  const double rows = static_cast<double>(s.tokens() / n);
  const UniformCost slow(2.0 * rows * 128 * (512.0 / n) / g, kInf, 0, rows * 128 * 4 / c, 2.0);
  EXPECT_EQ(simulate_case(plans_for(find_workload("ag_gemm"), "baseline", n), slow, "0").step(0),
            simulate_case(plans_for(find_workload("ag_gemm"), "baseline", n), base, "0").step(0));
  EXPECT_GT(simulate_case(plans_for(find_workload("ag_gemm"), "flash", n), slow, "0").step(0),
            simulate_case(plans_for(find_workload("ag_gemm"), "flash", n), base, "0").step(0));
}

TEST(Sim, ResultLayoutAndDeterminism) {
  const int n = 4;
  const std::vector<Plan> plans = plans_for(find_workload("mlp"), "flash:2", n);
  const UniformCost cost = cost_for(n, 1.0 / 1024, 1.0 / 512);
  const CaseResult a = simulate_case(plans, cost, "0007");
  const CaseResult b = simulate_case(plans, cost, "0007");
  EXPECT_EQ(a.id, "0007");
  EXPECT_EQ(a.workload, "mlp");
  EXPECT_EQ(a.strategy, "flash:2");
  EXPECT_EQ(a.world, n);
  EXPECT_EQ(a.iters, 1);
  EXPECT_EQ(a.warmup, 0);
  EXPECT_EQ(a.verified, -1);
  EXPECT_EQ(a.dtype, "fp32");
  size_t max_tasks = 0;
  for (const Plan& p : plans) max_tasks = std::max(max_tasks, p.tasks.size());
  ASSERT_EQ(static_cast<size_t>(a.max_tasks), max_tasks);
  ASSERT_EQ(a.tasks.size(), n * max_tasks);
  ASSERT_EQ(a.task_start.size(), n * max_tasks);
  ASSERT_EQ(a.step_seconds.size(), static_cast<size_t>(n));
  size_t deps = 0;
  for (const Plan& p : plans) {
    for (const Task& t : p.tasks) {
      deps += t.deps.size();
      const size_t at = static_cast<size_t>(p.rank) * max_tasks + static_cast<size_t>(t.id);
      EXPECT_EQ(a.tasks[at].task, t.id);
      EXPECT_EQ(a.tasks[at].label, t.label.substr(0, 63));
      EXPECT_LE(a.task_start[at], a.task_end[at]);
      EXPECT_LE(a.task_end[at], a.step_seconds[static_cast<size_t>(p.rank)]);
      for (int d : t.deps) {
        EXPECT_LE(a.task_end[static_cast<size_t>(p.rank) * max_tasks + static_cast<size_t>(d)],
                  a.task_start[at]);
      }
    }
  }
  EXPECT_EQ(a.deps.size(), deps);
  EXPECT_EQ(a.step_seconds, b.step_seconds);
  for (size_t i = 0; i < a.task_start.size(); ++i) {
    if (std::isnan(a.task_start[i])) {
      EXPECT_TRUE(std::isnan(b.task_start[i]));
      EXPECT_EQ(a.tasks[i].task, -1);
    } else {
      EXPECT_EQ(a.task_start[i], b.task_start[i]);
      EXPECT_EQ(a.task_end[i], b.task_end[i]);
    }
  }
}

TEST(Sim, CorruptedPlansThrow) {
  const int n = 4;
  const UniformCost cost = cost_for(n, 1.0 / 1024, 1.0 / 512);
  // A receive that waits on a later task of the peer, which in turn waits on this rank: rank 1
  // posts its exchanges in the reverse order, so rank 0's first exchange meets rank 1's last,
  // which cannot start before rank 1's first, which needs rank 0's second...
  std::vector<Plan> plans = plans_for(find_workload("ag_gemm"), "decompose", n);
  for (Task& t : plans[1].tasks) {
    if (t.kind == TaskKind::exchange) t.tag = 100 - t.tag;
  }
  for (Task& t : plans[2].tasks) {
    if (t.kind == TaskKind::exchange) t.tag = 100 - t.tag;
  }
  try {
    simulate_case(plans, cost, "0");
    ADD_FAILURE() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("task "), std::string::npos) << e.what();
  }
  // A send with no receive.
  plans = plans_for(find_workload("ag_gemm"), "flash", n);
  for (Task& t : plans[0].tasks) {
    if (t.kind == TaskKind::exchange) {
      t.tag += 1000;
      break;
    }
  }
  EXPECT_THROW(simulate_case(plans, cost, "0"), std::runtime_error);
}

// A genuine cross-rank deadlock: ranks 0 and 1 each receive before they send, as blocking
// halves on one comm stream.
TEST(Sim, DeadlockNamesRankAndTask) {
  std::vector<Plan> plans = plans_for(find_workload("ag_gemm"), "decompose", 2);
  for (Plan& p : plans) {
    // Rank r's exchange k becomes two tasks in the wrong order: recv then send.
    std::vector<Task> tasks;
    for (const Task& t : p.tasks) {
      if (t.kind != TaskKind::exchange) continue;
      Task recv = t, send = t;
      recv.kind = TaskKind::recv;
      recv.send_peer = -1;
      recv.deps.clear();
      recv.id = 0;
      send.kind = TaskKind::send;
      send.recv_peer = -1;
      send.deps = {0};
      send.id = 1;
      tasks = {recv, send};
      break;
    }
    p.tasks = tasks;
  }
  try {
    simulate_case(plans, cost_for(2, 1.0 / 1024, 1.0 / 512), "0");
    ADD_FAILURE() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock: rank 0 task 0"), std::string::npos) << e.what();
  }
}

// summarize() over simulated cases: T_comp, T_comm, T_lb and exposed communication from the
// closed forms above.
TEST(Sim, SummaryMatchesClosedForms) {
  const int n = 8;
  const double g = 1.0 / 1024, c = 1.0 / 2048;
  const UniformCost cost = cost_for(n, g, c);
  std::vector<CaseResult> cases;
  int id = 0;
  for (const char* s : {"baseline", "compute_only", "comm_only", "flash", "slicing:4"}) {
    cases.push_back(
        simulate_case(plans_for(find_workload("ag_gemm"), s, n), cost, std::to_string(id++)));
  }
  const std::vector<Summary> sums = summarize(cases);
  ASSERT_EQ(sums.size(), cases.size());
  for (const Summary& s : sums) {
    EXPECT_CLOSE(s.t_comp, n * g);
    EXPECT_CLOSE(s.t_comm, (n - 1) * c);
    EXPECT_CLOSE(s.t_lb, n * g);
    if (s.strategy == "baseline") {
      EXPECT_CLOSE(s.exposed_comm, (n - 1) * c);
    }
    if (s.strategy == "flash") {
      EXPECT_NEAR(s.exposed_comm, 0.0, 1e-15);
    }
    if (s.strategy == "slicing:4") {
      EXPECT_CLOSE(s.exposed_comm, (n - 1) * c / 4);
    }
  }
}

TEST(Sim, SpeedAtSixtyFourRanks) {
  const int n = 64;
  const UniformCost cost = cost_for(n, 1.0 / 1024, 1.0 / 2048);
  double sim_seconds = 0;
  size_t tasks = 0;
  for (const Strategy* s : all_strategies()) {
    if (!strategy_applies(*s, find_workload("mlp"))) continue;
    std::string spec = s->name;
    if (s->param_name != nullptr) spec += ":16";
    const std::vector<Plan> plans = plans_for(find_workload("mlp"), spec, n);
    for (const Plan& p : plans) tasks += p.tasks.size();
    const auto t0 = std::chrono::steady_clock::now();
    const CaseResult r = simulate_case(plans, cost, "0");
    sim_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(r.step(0), 0.0) << spec;
  }
  std::cout << "[ sim ] all mlp strategies, N=64, :16: " << tasks << " tasks simulated in "
            << sim_seconds * 1e3 << " ms\n";
}

}  // namespace
}  // namespace fob::sim_test
