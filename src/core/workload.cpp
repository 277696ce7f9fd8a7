#include "fob/workload.h"

#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

namespace fob {

Geometry layer_geometry(const Shape& shape) {
  Geometry g;
  g.m = shape.tokens();
  g.d = shape.hidden;
  g.f = shape.ffn;
  return g;
}

Geometry geometry(Workload workload, const Shape& shape) {
  Geometry g = workload->geometry(shape);
  if (g.ag_f == 0) g.ag_f = g.f;
  g.seq = shape.seq;
  g.heads = shape.head_count();
  g.head_dim = g.heads > 0 ? shape.hidden / g.heads : 0;
  return g;
}

bool has_attention(const std::string& workload) {
  const Workload w = find_workload(workload);
  return w != nullptr && w->has_heads;
}

std::string shape_options(const Shape& shape) {
  std::string text = "--batch " + std::to_string(shape.batch) + " --seq " +
                     std::to_string(shape.seq) + " --hidden " + std::to_string(shape.hidden) +
                     " --ffn " + std::to_string(shape.ffn);
  if (shape.heads > 0) text += " --heads " + std::to_string(shape.heads);
  return text;
}

namespace {

// Every dimension at least 1, and the dimensions a workload splits divisible by the world.
void validate_sizes(const CaseSpec& spec, const Geometry& g) {
  const Shape& s = spec.shape;
  const std::string world = std::to_string(spec.world);
  auto value_text = [&](const char* key, int64_t value) {
    return std::string(key) == "batch*seq" ? std::to_string(s.batch) + "*" + std::to_string(s.seq) +
                                                 " = " + std::to_string(value) + " tokens"
                                           : std::to_string(value);
  };
  for (auto [key, value] : {std::pair<const char*, int64_t>{g.m_key, g.m}, {g.f_key, g.f}}) {
    if (value % spec.world != 0) {
      throw InputError(std::string(key) + ": " + value_text(key, value) +
                       " does not divide by the world size " + world + " (" +
                       to_string(spec.workload) +
                       " splits it across ranks); choose a multiple of " + world);
    }
  }
}

// The strategy applies to the workload, and its parameter fits the rows each rank owns.
void validate_strategy(const CaseSpec& spec, const Geometry& g) {
  const Strategy* strategy = spec.strategy.strategy;
  if (!strategy) return;
  if (!strategy_applies(*strategy, spec.workload)) {
    throw InputError("strategies: '" + spec.strategy.text + "' applies to workload " +
                     applicable_workloads(*strategy) + " only, not " + to_string(spec.workload));
  }
  const int64_t block = g.m / spec.world;
  if (strategy->param_name && spec.strategy.param > block) {
    throw InputError("strategies: '" + spec.strategy.text + "': " + strategy->param_name + " = " +
                     std::to_string(spec.strategy.param) + " exceeds the " + std::to_string(block) +
                     " rows each rank owns (" + g.m_key + "/world); valid " + strategy->param_name +
                     ": 1.." + std::to_string(block));
  }
}

}  // namespace

void validate_case(const CaseSpec& spec) {
  const Shape& s = spec.shape;
  if (spec.world < 1) {
    throw InputError("world: " + std::to_string(spec.world) + " ranks; need at least 1");
  }
  for (auto [key, value] : {std::pair<const char*, int64_t>{"batch", s.batch},
                            {"seq", s.seq},
                            {"hidden", s.hidden},
                            {"ffn", s.ffn}}) {
    if (value < 1) {
      throw InputError(std::string(key) + ": " + std::to_string(value) + " must be at least 1");
    }
  }
  const Geometry g = geometry(spec.workload, s);
  validate_sizes(spec, g);
  if (spec.workload->validate) spec.workload->validate(spec, g);
  validate_strategy(spec, g);
}

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
