// The simulator's rotation quotient (sim.h): every strategy builds each rank's plan as rank 0's
// moved around the ring, and simulating one period of ranks gives every simulated time of the
// simulation of all ranks, bit for bit, on every case of every shipped config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/golden_machines.h"
#include "../common/shipped_cases.h"
#include "../common/temp_dir.h"
#include "../common/workload_cases.h"
#include "fob/config.h"
#include "fob/machine.h"
#include "fob/metrics.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/sim.h"
#include "fob/workload.h"

namespace fob {
namespace {

// Rank r of `full` (every rank simulated) against rank r % d of `quotient`, exactly.
void expect_same_times(const CaseResult& full, const CaseResult& quotient,
                       const std::string& what) {
  ASSERT_EQ(full.world, quotient.world) << what;
  const int d = quotient.ranks();
  ASSERT_EQ(full.ranks(), full.world) << what;
  ASSERT_EQ(full.max_tasks, quotient.max_tasks) << what;
  EXPECT_EQ(full.step(0), quotient.step(0)) << what;
  for (int r = 0; r < full.world; ++r) {
    ASSERT_EQ(full.step_seconds[static_cast<size_t>(r)],
              quotient.step_seconds[static_cast<size_t>(r % d)])
        << what << " rank " << r;
    for (int t = 0; t < full.max_tasks; ++t) {
      // Bit for bit: == on doubles, NaN padding on both sides alike.
      const double fs = full.start(0, r, t), qs = quotient.start(0, r % d, t);
      const double fe = full.end(0, r, t), qe = quotient.end(0, r % d, t);
      ASSERT_TRUE(fs == qs || (std::isnan(fs) && std::isnan(qs)))
          << what << " rank " << r << " task " << t;
      ASSERT_TRUE(fe == qe || (std::isnan(fe) && std::isnan(qe)))
          << what << " rank " << r << " task " << t;
    }
  }
}

// Every rank's plan is rank (r % p)'s rotated, p = plan_rotation_period, for every workload and
// strategy at worlds that are not powers of two too; and p is 1 wherever attention's sequences
// do not cross the ranks' blocks.
TEST(SimRotation, EveryPlanIsARotationWithinItsPeriod) {
  for (Workload w : every_workload()) {
    for (const std::string& s : strategies_for(w)) {
      for (int world : {2, 3, 4, 6, 8}) {
        const CaseSpec spec = test_case(w, s, world, DType::fp32);
        try {
          validate_case(spec);
        } catch (const InputError&) {
          continue;  // 12 heads do not split over 8 ranks
        }
        const std::vector<Plan> plans = make_plans(spec);
        const int period = plan_rotation_period(spec);
        ASSERT_GE(period, 1);
        // A workload with a period of its own (moe: every rank routes other tokens) may need
        // every rank; attention only where sequences straddle the blocks.
        const bool attn_aligned =
            w == find_workload("attn") && spec.shape.seq % (spec.shape.tokens() / world) == 0;
        if (!w->rotation_period || attn_aligned) {
          EXPECT_EQ(period, 1);
        }
        for (const Plan& p : plans) {
          EXPECT_TRUE(is_rotation_of(p, plans[static_cast<size_t>(p.rank % period)]))
              << to_string(w) << " " << s << " N=" << world << " rank " << p.rank;
        }
      }
    }
  }
  // Where the sequences straddle the blocks the query split sees it: at 3 ranks of 48 rows,
  // block r starts at 48 r mod 72 = 0, 48, 24 rows into a sequence.
  const CaseSpec straddling = test_case(find_workload("attn"), "flash_qs", 3, DType::fp32);
  EXPECT_EQ(plan_rotation_period(straddling), 3);
  EXPECT_FALSE(is_rotation_of(make_plan(straddling, 1), make_plan(straddling, 0)));
}

// Attention at b8 s96 (M = 768 tokens): a rank's block of 128 rows at N = 6, or 64 at N = 12,
// starts 0, 32 or 64 rows into a 96-token sequence, every 3 ranks again. The query split sees
// it, so the plans repeat every 3 ranks: with uniform rates N = 6 is simulated through 3 ranks,
// and on 2 ranks a node N = 12 through lcm(3, 2) = 6; every time as the simulation of all.
TEST(SimRotation, AttentionPeriodsBetweenOneAndTheWorld) {
  Machine two = golden_machines().front();
  two.ranks_per_node = 2;
  const MachineCost by_node(two);
  const UniformCost uniform(1e14, 1e12, 5e-6, 5e10, 1.2);
  int simulated = 0;
  for (Workload w : {find_workload("attn"), find_workload("ulysses")}) {
    for (const std::string& s : strategies_for(w)) {
      for (int world : {6, 12}) {
        CaseSpec spec = test_case(w, s, world, DType::fp32);
        spec.shape.batch = 8;
        try {
          validate_case(spec);
        } catch (const InputError&) {
          continue;
        }
        const int period = plan_rotation_period(spec);
        EXPECT_EQ(period, w == find_workload("attn") ? 3 : 1) << s << " N=" << world;
        const std::vector<Plan> plans = make_plans(spec);
        for (const Plan& p : plans) {
          ASSERT_TRUE(is_rotation_of(p, plans[static_cast<size_t>(p.rank % period)]))
              << to_string(w) << " " << s << " N=" << world << " rank " << p.rank;
        }
        const CostModel& cost = world == 6 ? static_cast<const CostModel&>(uniform) : by_node;
        const CaseResult quotient = simulate_spec(spec, cost, "q");
        EXPECT_EQ(quotient.ranks(), (world == 6 ? 1 : 2) * (w == find_workload("attn") ? 3 : 1));
        expect_same_times(simulate_case(plans, cost, "f"), quotient,
                          std::string(to_string(w)) + " " + s + " N=" + std::to_string(world));
        ++simulated;
      }
    }
  }
  EXPECT_GE(simulated, 30);
  // The query split is where the blocks' positions show: its ranks 0 and 1 differ.
  CaseSpec qs = test_case(find_workload("attn"), "flash_qs", 6, DType::fp32);
  qs.shape.batch = 8;
  EXPECT_FALSE(is_rotation_of(make_plan(qs, 1), make_plan(qs, 0)));
}

// A plan that is not a rotation is seen as one: a peer, a tag or a shape differing.
TEST(SimRotation, DifferencesAreNotRotations) {
  const CaseSpec spec = test_case(find_workload("mlp"), "flash:2", 4, DType::fp32);
  const Plan base = make_plan(spec, 0);
  Plan moved = make_plan(spec, 1);
  ASSERT_TRUE(is_rotation_of(moved, base));
  for (Task& t : moved.tasks) {
    if (t.send_peer >= 0) {
      t.send_peer = (t.send_peer + 1) % spec.world;
      break;
    }
  }
  EXPECT_FALSE(is_rotation_of(moved, base));
  moved = make_plan(spec, 1);
  moved.tasks.back().m += 1;
  EXPECT_FALSE(is_rotation_of(moved, base));
}

// An uneven all-to-all's blocks move with the ring too: the same bytes sent to other peers
// price otherwise (a step waits for its largest block), so a plan whose blocks were not moved
// is no rotation, and the mixture of experts' ranks, which route other tokens, are none.
TEST(SimRotation, AnUnevenAllToAllsBlocksMoveWithTheRing) {
  const CaseSpec spec = test_case(find_workload("moe"), "baseline", 4, DType::fp32);
  const Plan base = make_plan(spec, 0);
  ASSERT_FALSE(base.peer_spans.empty());
  auto move_one = [](auto& v) { std::rotate(v.begin(), v.end() - 1, v.end()); };
  Plan moved = base;
  moved.rank = 1;
  for (Task& t : moved.tasks) {
    if (t.send_peer >= 0) t.send_peer = (t.send_peer + 1) % spec.world;
    if (t.recv_peer >= 0) t.recv_peer = (t.recv_peer + 1) % spec.world;
  }
  for (PeerSpans& blocks : moved.peer_spans) {
    move_one(blocks.send);
    move_one(blocks.recv);
  }
  EXPECT_TRUE(is_rotation_of(moved, base));
  Plan unmoved = moved;
  unmoved.peer_spans = base.peer_spans;
  EXPECT_FALSE(is_rotation_of(unmoved, base));
  for (int r = 1; r < spec.world; ++r) {
    EXPECT_FALSE(is_rotation_of(make_plan(spec, r), base)) << "rank " << r;
  }
  // So the simulator builds every rank's plan, whatever the machine's period.
  EXPECT_EQ(plans_to_simulate(spec, UniformCost(1e12, 1e12, 0, 1e9)).size(), 4u);
}

// Every case of every shipped config at every world of 2, 4, 8 and 16 its shapes divide by, on
// every shipped machine (its own topology, and 2 ranks a node so that worlds 4..16 are
// simulated through 2 ranks) and on uniform rates (through 1 rank): the same times as the
// simulation of every rank.
TEST(SimRotation, QuotientTimesEqualFullOnShippedConfigs) {
  const char* root = std::getenv("FOB_SOURCE_DIR");
  if (!root || !*root) GTEST_SKIP() << "FOB_SOURCE_DIR is not set (ctest sets it)";
  std::vector<Machine> machines;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) /
                                                           "bench_configs/machines")) {
    if (e.path().extension() != ".yaml") continue;
    machines.push_back(load_machine(e.path().string()));
    Machine two = machines.back();
    two.ranks_per_node = 2;
    machines.push_back(two);
  }
  const UniformCost uniform(1e14, 1e12, 5e-6, 5e10, 1.2);
  int compared = 0, quotients = 0;
  for (const ShippedCase& c : shipped_cases(root)) {
    const std::vector<Plan> plans = make_plans(c.spec);
    const std::string what = c.config + ": " + CaseKey::of(c.spec).text();
    std::vector<const CostModel*> costs = {&uniform};
    std::vector<MachineCost> machine_costs;
    machine_costs.reserve(machines.size());
    for (const Machine& m : machines) {
      if (m.compute.count(c.spec.dtype)) machine_costs.emplace_back(m);
    }
    for (const MachineCost& m : machine_costs) costs.push_back(&m);
    for (const CostModel* cost : costs) {
      const CaseResult quotient = simulate_spec(c.spec, *cost, "q");
      const CaseResult full = simulate_case(plans, *cost, "f");
      expect_same_times(full, quotient, what);
      ++compared;
      quotients += quotient.ranks() < c.spec.world ? 1 : 0;
    }
  }
  // The comparison covers quotients of every kind: most cases are simulated through fewer
  // ranks than they have.
  EXPECT_GT(compared, 1000);
  EXPECT_GT(quotients, compared / 2);
}

// What a report reads of a case simulated through 2 of its 12 ranks is what it reads of the
// case simulated rank by rank, every metric to the bit (the concurrency sums every rank in
// order); and the results file keeps the 2 ranks, says so, and reads back the same.
TEST(SimRotation, SummaryAndFileOfAQuotientCase) {
  // Contention both ways, so that the concurrency depends on when each task ran.
  Machine m = golden_machines().front();
  m.ranks_per_node = 2;
  const MachineCost cost(m);
  std::vector<CaseResult> full, quotient;
  for (const char* s :
       {"compute_only", "comm_only", "baseline", "slicing:2", "flash:2", "flash_direct"}) {
    const CaseSpec spec = test_case(find_workload("gemm_rs_grad"), s, 12, DType::fp32);
    full.push_back(simulate_case(make_plans(spec), cost, std::to_string(full.size())));
    quotient.push_back(simulate_spec(spec, cost, std::to_string(quotient.size())));
    ASSERT_EQ(quotient.back().ranks(), 2);
    ASSERT_TRUE(quotient.back().arrays_match());
  }
  const std::vector<Summary> a = summarize(full), b = summarize(quotient);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double fa[] = {a[i].t_median, a[i].t_lb,  a[i].speedup, a[i].slicing_penalty,
                         a[i].tflops,   a[i].algbw, a[i].busbw,   a[i].concurrency};
    const double fb[] = {b[i].t_median, b[i].t_lb,  b[i].speedup, b[i].slicing_penalty,
                         b[i].tflops,   b[i].algbw, b[i].busbw,   b[i].concurrency};
    for (size_t k = 0; k < std::size(fa); ++k) {
      EXPECT_TRUE(fa[k] == fb[k] || (std::isnan(fa[k]) && std::isnan(fb[k])))
          << a[i].strategy << " field " << k << ": " << fa[k] << " vs " << fb[k];
    }
  }
  EXPECT_GT(b[4].concurrency, 0.0);  // flash:2 overlaps: a metric that can differ

  const TempDir dir;
  const std::string path = dir.file("q.h5");
  {
    ResultWriter writer(path, false, RunInfo{}, SystemInfo{});
    writer.add_cases(quotient);  // what `fobench sim -o` does: one flush
    EXPECT_THROW(writer.add_cases({quotient.front()}), std::logic_error);  // no id twice
    EXPECT_TRUE(writer.cases().front().task_end.empty());  // the file has the timings
    writer.finish();
  }
  const ResultFile back = read_results(path);
  ASSERT_EQ(back.cases.size(), quotient.size());
  for (size_t i = 0; i < quotient.size(); ++i) {
    EXPECT_EQ(back.cases[i].world, 12);
    EXPECT_EQ(back.cases[i].stored, 2);
    EXPECT_EQ(back.cases[i].task_end, quotient[i].task_end);
  }
  EXPECT_EQ(summarize(back.cases)[4].concurrency, a[4].concurrency);
}

}  // namespace
}  // namespace fob
