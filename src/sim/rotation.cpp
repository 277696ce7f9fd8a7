// Simulating a ring through one period of its ranks (sim.h): the rotation check and the
// plans a case is simulated with.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "fob/sim.h"
#include "fob/workload.h"

namespace fob {
namespace {

// A peer named by `from`, moved by `shift` ranks around a ring of `world`; -1 stays -1.
int moved(int peer, int shift, int world) {
  return peer < 0 ? peer : ((peer + shift) % world + world) % world;
}

bool same_spans(const std::vector<RowSpan>& a, const std::vector<RowSpan>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const RowSpan& x, const RowSpan& y) {
    return x.row == y.row && x.rows == y.rows;
  });
}

// Whether `a`'s blocks are `b`'s with every peer moved by `shift`: an uneven all-to-all sends
// what its spans give each peer, so the same Task::bytes spread over other peers prices
// differently (a step waits for its largest block).
bool spans_rotated(const Plan& plan, const Task& a, const Plan& base, const Task& b, int shift) {
  if (a.spans != b.spans) return false;
  if (a.spans < 0) return true;
  const size_t ia = static_cast<size_t>(a.spans), ib = static_cast<size_t>(b.spans);
  if (ia >= plan.peer_spans.size() || ib >= base.peer_spans.size()) return false;
  const PeerSpans& x = plan.peer_spans[ia];
  const PeerSpans& y = base.peer_spans[ib];
  const size_t n = static_cast<size_t>(plan.world);
  if (x.send.size() != n || x.recv.size() != n || y.send.size() != n || y.recv.size() != n) {
    return false;
  }
  for (int j = 0; j < plan.world; ++j) {
    const size_t to = static_cast<size_t>(moved(j, shift, plan.world));
    if (!same_spans(x.send[to], y.send[static_cast<size_t>(j)]) ||
        !same_spans(x.recv[to], y.recv[static_cast<size_t>(j)])) {
      return false;
    }
  }
  return true;
}

}  // namespace

int CostModel::rotation_period(int world) const {
  return world;
}

int UniformCost::rotation_period(int /*world*/) const {
  return 1;
}

bool is_rotation_of(const Plan& plan, const Plan& base) {
  if (plan.world != base.world || plan.dtype != base.dtype ||
      plan.tasks.size() != base.tasks.size()) {
    return false;
  }
  const int shift = plan.rank - base.rank;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const Task& a = plan.tasks[i];
    const Task& b = base.tasks[i];
    if (a.id != b.id || a.stream != b.stream || a.kind != b.kind || a.deps != b.deps ||
        a.m != b.m || a.n != b.n || a.k != b.k || a.batch != b.batch || a.op != b.op ||
        a.bytes != b.bytes || a.flops != b.flops || a.tag != b.tag ||
        a.send_peer != moved(b.send_peer, shift, plan.world) ||
        a.recv_peer != moved(b.recv_peer, shift, plan.world) ||
        !spans_rotated(plan, a, base, b, shift)) {
      return false;
    }
  }
  return true;
}

std::vector<Plan> plans_to_simulate(const CaseSpec& spec, const CostModel& cost) {
  const int world = spec.world;
  const int64_t cost_period = cost.rotation_period(world);
  const int64_t plan_period = plan_rotation_period(spec);
  if (cost_period < 1 || plan_period < 1) return make_plans(spec);
  // Both symmetries at once: a multiple of both periods.
  const int64_t period64 = std::lcm(cost_period, plan_period);
  if (period64 >= world || world % period64 != 0) return make_plans(spec);
  const int period = static_cast<int>(period64);
  std::vector<Plan> plans;
  plans.reserve(static_cast<size_t>(period));
  for (int r = 0; r < period; ++r) plans.push_back(make_plan(spec, r));
  // Every strategy builds rotations today (tests/unit/test_sim_rotation.cpp checks them all);
  // the ranks just past the period and the last rank are checked here too, so a strategy that
  // stops doing so is simulated rank by rank rather than wrongly.
  for (int r : {period, world - 1}) {
    if (!is_rotation_of(make_plan(spec, r), plans[static_cast<size_t>(r % period)])) {
      return make_plans(spec);
    }
  }
  return plans;
}

CaseResult simulate_spec(const CaseSpec& spec, const CostModel& cost, const std::string& case_id) {
  return simulate_case(plans_to_simulate(spec, cost), spec.world, cost, case_id);
}

}  // namespace fob
