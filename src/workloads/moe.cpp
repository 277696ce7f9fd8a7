// moe: a mixture-of-experts layer with expert parallelism. Rank r holds T = M/N tokens and the
// experts e with e % N == r, each a GLU MLP (up-projection to gate and value, ReGLU, down-
// projection); the router (moe.h) sends every token to its top-k experts, so the dispatch and
// combine all-to-alls carry uneven blocks, and y = each token's experts' outputs summed by its
// routing weights (strategy.h's MoeProblem).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fob/inputs.h"
#include "fob/layer.h"
#include "fob/moe.h"

namespace fob {
namespace {

// M tokens over the ranks and D hidden as every layer; F is each expert's own, never split.
Geometry moe_geometry(const Shape& shape) {
  Geometry g = layer_geometry(shape);
  g.f = shape.expert_ffn();
  g.f_key = "expert_ffn";
  g.f_split = false;
  return g;
}

void add_inputs(PlanBuilder& b, const MoeProblem& p, const Geometry& g, int world) {
  const int r = b.rank();
  b.input({p.x, 0, p.tokens, g.x, r * p.tokens, 0});
  for (int64_t l = 0; l < moe_local_experts(p.routing->experts, world, r); ++l) {
    const int64_t e = r + l * world;
    b.input({p.w1, l * p.hidden, p.hidden, g.w1, e * p.hidden, 0, 0, /*weight=*/true});
    b.input({p.w2, l * p.expert_ffn, p.expert_ffn, g.w2, e * p.expert_ffn, 0, 0, true});
  }
}

// What each role's plan must hold: the layer's output, or for a reference mode the buffers its
// input data passed through (each only where this rank has rows of it).
void add_checks(PlanBuilder& b, const Strategy& strategy, const MoeProblem& p) {
  const MoeLayout layout = moe_layout(*p.routing, b.rank(), 1);
  auto check = [&](const char* buffer, int64_t rows, CheckKind kind) {
    if (rows > 0) b.check(b.buffer_id(buffer), kind);
  };
  if (strategy.role == StrategyRole::comm_reference) {
    check("xe", layout.recv_total(), CheckKind::moe_dispatched);
    check("yc", layout.send_total(), CheckKind::moe_combined);
  } else if (strategy.role == StrategyRole::compute_reference) {
    check("xs", layout.send_total(), CheckKind::moe_gathered);
    check("ye", layout.recv_total(), CheckKind::moe_expert_out);
    b.check(p.y, CheckKind::moe_input_combined);
  } else {
    b.check(p.y, CheckKind::moe_out);
  }
}

void build_moe(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  const Strategy& strategy = *spec.strategy.strategy;
  const std::shared_ptr<const MoeRouting> shared =
      shared_routing(moe_router(spec.shape, spec.world));
  const MoeRouting& routing = *shared;
  const int64_t local = moe_local_experts(routing.experts, spec.world, b.rank());
  MoeProblem p;
  p.tokens = g.m / spec.world;
  p.hidden = g.d;
  p.expert_ffn = g.f;
  p.routing = &routing;
  p.x = b.buffer("x", p.tokens, g.d);
  p.w1 = b.buffer("w1", std::max<int64_t>(local * g.d, 1), 2 * g.f);
  p.w2 = b.buffer("w2", std::max<int64_t>(local * g.f, 1), g.d);
  p.y = b.buffer("y", p.tokens, g.d);
  if (strategy.role != StrategyRole::comm_reference) add_inputs(b, p, g, spec.world);
  strategy.moe_layer(b, p, spec.strategy.param);
  add_checks(b, strategy, p);
}

// The router's own settings (its keys, named in its messages).
void validate_moe(const CaseSpec& spec, const Geometry& /*g*/) {
  shared_routing(moe_router(spec.shape, spec.world));
}

// No rank's plan is another's moved: each routes other tokens.
int every_rank(const CaseSpec& spec, const Geometry& /*g*/) {
  return spec.world;
}

// The oracle: each expert's MLP in double over the integer inputs, one row at a time, its
// weights read once per expert.
class MoeOracle {
 public:
  MoeOracle(const Plan& plan, uint64_t seed)
      : plan_(plan),
        seed_(seed),
        d_(plan.shape.hidden),
        f_(plan.shape.expert_ffn()),
        routed_(shared_routing(moe_router(plan.shape, plan.world))),
        routing_(*routed_),
        layout_(moe_layout(routing_, plan.rank, 1)) {}

  std::vector<double> expected(CheckKind kind) {
    switch (kind) {
      case CheckKind::moe_out:
        return weighted_sum([&](int64_t t, int64_t q) {
          const int64_t token = plan_.rank * t_rows() + t;
          return mlp(routing_.expert[routing_.choice(token, q)], row("X", token));
        });
      case CheckKind::moe_input_combined:
        return weighted_sum([&](int64_t t, int64_t q) {
          const int64_t at = layout_.combine_row[q * t_rows() + t];
          return row("YC", moe_input_row(routing_, plan_.rank, at));
        });
      case CheckKind::moe_gathered:
        return rows(layout_.send_total(), [&](int64_t i) {
          return row("X", plan_.rank * t_rows() + layout_.send_token[i]);
        });
      case CheckKind::moe_expert_out:
        return expert_out();
      case CheckKind::moe_dispatched:
        return dispatched();
      case CheckKind::moe_combined:
        return combined();
      default:
        return {};
    }
  }

 private:
  int64_t t_rows() const { return routing_.tokens_per_rank(); }

  std::vector<double> row(const char* tensor, int64_t global_row) const {
    std::vector<double> v(static_cast<size_t>(d_));
    for (int64_t c = 0; c < d_; ++c) v[c] = input_value(seed_, tensor, global_row, c);
    return v;
  }

  // up = x * W1_e [D, 2F]; a = max(gate, 0) * value; out = a * W2_e [F, D].
  std::vector<double> mlp(int64_t expert, const std::vector<double>& x) {
    const Weights& w = weights(expert);
    std::vector<double> a(static_cast<size_t>(f_)), out(static_cast<size_t>(d_), 0.0);
    for (int64_t j = 0; j < f_; ++j) {
      double gate = 0, value = 0;
      for (int64_t k = 0; k < d_; ++k) {
        gate += x[k] * w.w1[k * 2 * f_ + j];
        value += x[k] * w.w1[k * 2 * f_ + f_ + j];
      }
      a[j] = std::max(gate, 0.0) * value;
    }
    for (int64_t j = 0; j < f_; ++j) {
      for (int64_t c = 0; c < d_; ++c) out[c] += a[j] * w.w2[j * d_ + c];
    }
    return out;
  }

  struct Weights {
    std::vector<double> w1, w2;  // [D, 2F], [F, D]
  };
  const Weights& weights(int64_t expert) {
    auto found = weights_.find(expert);
    if (found != weights_.end()) return found->second;
    Weights w;
    for (int64_t k = 0; k < d_; ++k) {
      for (int64_t j = 0; j < 2 * f_; ++j)
        w.w1.push_back(input_value(seed_, "W1", expert * d_ + k, j));
    }
    for (int64_t j = 0; j < f_; ++j) {
      for (int64_t c = 0; c < d_; ++c) w.w2.push_back(input_value(seed_, "W2", expert * f_ + j, c));
    }
    return weights_.emplace(expert, std::move(w)).first->second;
  }

  // Rows of D values, row i from `at(i)`.
  template <typename At>
  std::vector<double> rows(int64_t count, At at) const {
    std::vector<double> out;
    out.reserve(static_cast<size_t>(count * d_));
    for (int64_t i = 0; i < count; ++i) {
      const std::vector<double> v = at(i);
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  }

  // Each local token's kept choices, weighted and summed; `value(t, q)` is choice q's row.
  template <typename Value>
  std::vector<double> weighted_sum(Value value) {
    std::vector<double> out(static_cast<size_t>(t_rows() * d_), 0.0);
    for (int64_t t = 0; t < t_rows(); ++t) {
      for (int64_t q = 0; q < routing_.top_k; ++q) {
        if (layout_.combine_row[q * t_rows() + t] < 0) continue;
        const std::vector<double> v = value(t, q);
        const double w = layout_.combine_weight[q * t_rows() + t];
        for (int64_t c = 0; c < d_; ++c) out[t * d_ + c] += w * v[c];
      }
    }
    return out;
  }

  // Expert order: local expert l's rows together, its MLP of the input XE rows.
  std::vector<double> expert_out() {
    std::vector<double> out;
    for (int64_t l = 0; l < layout_.local_experts; ++l) {
      const int64_t first = layout_.recv_offset(l, 0, 0);
      const int64_t expert = plan_.rank + l * plan_.world;
      for (int64_t i = first; i < first + layout_.expert_rows(l); ++i) {
        const std::vector<double> v =
            mlp(expert, row("XE", moe_input_row(routing_, plan_.rank, i)));
        out.insert(out.end(), v.begin(), v.end());
      }
    }
    return out;
  }

  // Block (l, 0, i) of the expert order is rank i's dispatch block (0, r, l), row for row.
  std::vector<double> dispatched() const {
    std::vector<double> out;
    for (int64_t l = 0; l < layout_.local_experts; ++l) {
      for (int64_t i = 0; i < plan_.world; ++i) {
        const MoeLayout sender = moe_layout(routing_, i, 1);
        const int64_t first = sender.send_offset(0, plan_.rank, l);
        for (int64_t o = 0; o < layout_.recv_rows(l, 0, i); ++o) {
          const std::vector<double> v = row("XS", moe_input_row(routing_, i, first + o));
          out.insert(out.end(), v.begin(), v.end());
        }
      }
    }
    return out;
  }

  // Block (0, j, l) of the dispatch order comes back from rank j's expert block (l, 0, r).
  std::vector<double> combined() const {
    std::vector<double> out;
    for (int64_t j = 0; j < plan_.world; ++j) {
      const MoeLayout expert_rank = moe_layout(routing_, j, 1);
      for (int64_t l = 0; l < expert_rank.local_experts; ++l) {
        const int64_t first = expert_rank.recv_offset(l, 0, plan_.rank);
        for (int64_t o = 0; o < layout_.send_rows(0, j, l); ++o) {
          const std::vector<double> v = row("YE", moe_input_row(routing_, j, first + o));
          out.insert(out.end(), v.begin(), v.end());
        }
      }
    }
    return out;
  }

  const Plan& plan_;
  uint64_t seed_;
  int64_t d_, f_;
  std::shared_ptr<const MoeRouting> routed_;  // the plans' own routing, routed once per case
  const MoeRouting& routing_;
  MoeLayout layout_;
  std::map<int64_t, Weights> weights_;
};

std::vector<double> moe_expected(const Plan& plan, const OutputCheck& check, uint64_t seed) {
  return MoeOracle(plan, seed).expected(check.kind);
}

}  // namespace

// A check shape with the cases docs/correctness.md names: 5 experts, which no world of 2 to 4
// divides; a capacity that drops tokens; a skew that leaves some expert without any.
extern constinit const WorkloadDef kMoe = {
    .name = "moe",
    .summary = "mixture-of-experts layer: all-to-all-v dispatch, expert GLU MLPs, combine",
    .geometry = moe_geometry,
    .build = build_moe,
    .patterns = kMoeLayer,
    .has_experts = true,
    .validate = validate_moe,
    .no_loopback = "every rank routes other tokens, so no rank's data stands for another's",
    .rotation_period = every_rank,
    .expected = moe_expected,
    .check_shape = Shape{2, 36, 48, 40, 0, MoeShape{5, 2, 0, 1.5, 1.25, 0}},
    .small_shape = Shape{1, 24, 16, 12, 0, MoeShape{5, 2, 0, 1.5, 1.25, 0}},
};

}  // namespace fob
