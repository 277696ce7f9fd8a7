#include "fob/workload.h"

#include <string>

namespace fob {
namespace {

std::string divisors_hint(int64_t value) {
  std::string text;
  int shown = 0;
  for (int64_t d = 1; d <= value && shown < 8; ++d) {
    if (value % d == 0) {
      text += (shown ? ", " : "") + std::to_string(d);
      ++shown;
    }
  }
  return text;
}

}  // namespace

void validate_case(const CaseSpec& spec) {
  const Shape& s = spec.shape;
  const std::string world = std::to_string(spec.world);
  if (spec.world < 1) throw InputError("world: " + world + " ranks; need at least 1");
  for (auto [key, value] : {std::pair<const char*, int64_t>{"batch", s.batch},
                            {"seq", s.seq},
                            {"hidden", s.hidden},
                            {"ffn", s.ffn}}) {
    if (value < 1) {
      throw InputError(std::string(key) + ": " + std::to_string(value) + " must be at least 1");
    }
  }
  if (s.tokens() % spec.world != 0) {
    throw InputError("batch*seq: " + std::to_string(s.batch) + "*" + std::to_string(s.seq) + " = " +
                     std::to_string(s.tokens()) + " tokens do not divide by the world size " +
                     world + "; choose batch and seq so that batch*seq is a multiple of " + world);
  }
  if (s.ffn % spec.world != 0) {
    throw InputError("ffn: " + std::to_string(s.ffn) + " does not divide by the world size " +
                     world + "; choose a multiple of " + world);
  }
  const int64_t block = s.tokens() / spec.world;
  const Strategy* strategy = spec.strategy.strategy;
  if (strategy && strategy->param_name && block % spec.strategy.param != 0) {
    throw InputError("strategies: '" + spec.strategy.text + "': " + strategy->param_name + " = " +
                     std::to_string(spec.strategy.param) + " must divide the " +
                     std::to_string(block) + " rows each rank owns (batch*seq/world); valid " +
                     strategy->param_name + ": " + divisors_hint(block) + ", ...");
  }
}

Plan make_plan(const CaseSpec& spec, int rank) {
  validate_case(spec);
  Plan plan;
  plan.workload = spec.workload;
  plan.strategy = spec.strategy.text;
  plan.shape = spec.shape;
  plan.dtype = spec.dtype;
  plan.world = spec.world;
  plan.rank = rank;
  PlanBuilder b(plan);

  const int64_t m = spec.shape.tokens();
  const int64_t d = spec.shape.hidden;
  const int64_t f_local = spec.shape.ffn / spec.world;
  const int64_t block = m / spec.world;
  const Strategy& strategy = *spec.strategy.strategy;
  const bool has_ag = spec.workload != Workload::gemm_rs;
  const bool has_rs = spec.workload != Workload::ag_gemm;

  int y = -1;
  if (has_ag) {
    AgProblem ag;
    ag.x = b.buffer("x", m, d);
    ag.w = b.buffer("w1", d, f_local);
    ag.y = y = b.buffer("y", m, f_local);
    ag.tokens = m;
    ag.hidden = d;
    ag.ffn_local = f_local;
    ag.block = block;
    b.input({ag.x, rank * block, block, "X", rank * block, 0});
    b.input({ag.w, 0, d, "W1", 0, rank * f_local});
    strategy.all_gather_gemm(b, ag, spec.strategy.param);
    if (!strategy.is_reference) b.check(ag.y, CheckKind::ag_out);
  }
  if (has_rs) {
    RsProblem rs;
    if (has_ag) {
      rs.h = y;  // the MLP's second GEMM consumes the first one's output
    } else {
      rs.h = b.buffer("h", m, f_local);
      b.input({rs.h, 0, m, "H", 0, rank * f_local});
    }
    rs.w = b.buffer("w2", f_local, d);
    rs.z = b.buffer("z", block, d);
    rs.tokens = m;
    rs.hidden = d;
    rs.ffn_local = f_local;
    rs.block = block;
    b.input({rs.w, 0, f_local, "W2", rank * f_local, 0});
    strategy.gemm_reduce_scatter(b, rs, spec.strategy.param);
    if (!strategy.is_reference) b.check(rs.z, CheckKind::rs_out);
  }
  return plan;
}

}  // namespace fob
