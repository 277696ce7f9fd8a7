// A case's plans: the workload's build around the strategy's halves, rank by rank.
#include <numeric>
#include <string>
#include <vector>

#include "fob/workload.h"

namespace fob {

int64_t loopback_period(const CaseSpec& spec) {
  const Geometry g = geometry(spec.workload, spec.shape);
  const int64_t n = spec.world;
  int64_t period = std::gcd(std::gcd(g.m / n, g.d), std::gcd(g.f / n, g.ag_f / n));
  const int64_t extent =
      spec.workload->loopback_extent ? spec.workload->loopback_extent(g, spec.world) : 0;
  if (extent > 0) period = std::gcd(period, extent);
  if (period < 2) {
    throw InputError("loopback: the shards of this shape at world " + std::to_string(n) +
                     " have no common period above 1 (" + g.m_key + "/world, hidden, " + g.f_key +
                     "/world" + (extent > 0 ? ", seq" : "") +
                     "), so every input would be one value; choose sizes with a common factor");
  }
  return period;
}

namespace {

// To itself, a send only completes against the receive posted with it (one NCCL group, one
// MPI request set): a half posted alone would wait forever.
void check_loopback_transfers(const CaseSpec& spec, const Plan& plan) {
  for (const Task& t : plan.tasks) {
    const bool p2p = t.is_transfer() && t.kind != TaskKind::collective;
    if (p2p && t.sends() != t.receives()) {
      throw InputError("loopback: strategy '" + spec.strategy.text +
                       "' has a one-sided transfer (task " + std::to_string(t.id) + " '" + t.label +
                       "'), which a process cannot send to itself; loopback cannot run this "
                       "strategy");
    }
  }
}

}  // namespace

Plan make_plan(const CaseSpec& spec, int rank) {
  validate_case(spec);
  Plan plan;
  plan.workload = spec.workload;
  plan.strategy = spec.strategy;
  plan.shape = spec.shape;
  plan.dtype = spec.dtype;
  plan.world = spec.world;
  plan.rank = rank;
  if (spec.loopback) plan.input_period = loopback_period(spec);
  PlanBuilder b(plan);
  spec.workload->build(b, spec, geometry(spec.workload, spec.shape));
  if (spec.loopback) check_loopback_transfers(spec, plan);
  return plan;
}

int plan_rotation_period(const CaseSpec& spec) {
  if (!spec.workload->rotation_period || spec.world < 1) return 1;
  return spec.workload->rotation_period(spec, geometry(spec.workload, spec.shape));
}

std::vector<Plan> make_plans(const CaseSpec& spec) {
  std::vector<Plan> plans;
  plans.reserve(static_cast<size_t>(spec.world));
  for (int r = 0; r < spec.world; ++r) plans.push_back(make_plan(spec, r));
  return plans;
}

}  // namespace fob
