#include "fob/workload.h"

#include "ulysses_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

namespace fob {

Geometry geometry(Workload workload, const Shape& shape) {
  Geometry g;
  g.m = shape.tokens();
  g.d = shape.hidden;
  g.f = shape.ffn;
  switch (workload) {
    case Workload::ag_gemm:
      g.has_ag = true;
      break;
    case Workload::gemm_rs:
      g.has_rs = true;
      break;
    case Workload::mlp:
      g.has_ag = g.has_rs = true;
      g.h_is_y = true;
      break;
    case Workload::mlp_bwd:
      g.has_ag = g.has_rs = true;
      g.h_is_y = true;
      g.backward = true;
      g.x = "DZ";
      g.w1 = "W2T";
      g.w2 = "W1T";
      break;
    case Workload::gemm_ar:
      g.has_rs = true;
      g.all_reduce = true;
      break;
    case Workload::ag_gemm_w:
      g.has_ag = true;
      g.m = shape.ffn;
      g.f = shape.tokens();
      g.m_key = "ffn";
      g.f_key = "batch*seq";
      g.x = "WT";
      g.w1 = "XT";
      break;
    case Workload::gemm_rs_grad:
      g.has_rs = true;
      g.m = shape.hidden;
      g.d = shape.ffn;
      g.f = shape.tokens();
      g.m_key = "hidden";
      g.f_key = "batch*seq";
      g.h = "XT";
      g.w2 = "DY";
      break;
    case Workload::attn:
    case Workload::ulysses:
      // The same tensors; ulysses splits the tokens instead of gathering them, and exchanges
      // heads by all-to-all instead of the all-gather and reduce-scatter halves.
      g.all_to_all = workload == Workload::ulysses;
      g.has_ag = g.has_rs = !g.all_to_all;
      g.attention = true;
      g.f = shape.hidden;
      g.ag_f = 3 * shape.hidden;
      g.f_key = "hidden";
      g.w1 = "WQKV";
      g.h = "O";
      g.w2 = "WO";
      break;
  }
  if (g.ag_f == 0) g.ag_f = g.f;
  g.seq = shape.seq;
  g.heads = shape.head_count();
  g.head_dim = g.heads > 0 ? shape.hidden / g.heads : 0;
  return g;
}

bool has_attention(const std::string& workload) {
  for (Workload w : kAllWorkloads) {
    if (workload == to_string(w)) return geometry(w, Shape{}).attention;
  }
  return false;
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
  if (g.all_to_all && s.seq % spec.world != 0) {
    throw InputError(
        "seq: " + std::to_string(s.seq) + " does not divide by the world size " + world +
        " (ulysses splits every sequence across ranks); choose a multiple of " + world);
  }
}

// Attention's heads: given or the default, dividing hidden and the world; and its scores, which
// must stay addressable.
void validate_heads(const CaseSpec& spec, const Geometry& g) {
  const Shape& s = spec.shape;
  const std::string world = std::to_string(spec.world);
  const std::string heads = std::to_string(g.heads);
  if (s.heads < 0) throw InputError("heads: " + std::to_string(s.heads) + " must be at least 1");
  if (s.heads == 0 && (g.heads < 1 || s.hidden % Shape::kDefaultHeadDim != 0)) {
    throw InputError("heads: not given, and hidden " + std::to_string(s.hidden) +
                     " is not a multiple of the default head size " +
                     std::to_string(Shape::kDefaultHeadDim) +
                     "; give heads, a divisor of hidden and a multiple of the world size " + world);
  }
  if (s.hidden % g.heads != 0) {
    throw InputError("heads: " + heads + " does not divide hidden " + std::to_string(s.hidden) +
                     "; choose a divisor of hidden");
  }
  if (g.heads % spec.world != 0) {
    throw InputError("heads: " + heads + " does not divide by the world size " + world + " (" +
                     to_string(spec.workload) +
                     " splits the heads across ranks); choose a multiple of " + world);
  }
  // A sequence's scores, seq x seq per head, are one buffer: past 2^50 elements its byte count
  // would wrap (config.cpp bounds the other tensors the same way).
  const long double scores = static_cast<long double>(g.heads) * s.seq * s.seq;
  if (scores > kMaxTensorElements) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "shape: heads x seq x seq (attention scores) = %.3Lg elements is too large "
                  "for any machine; at most 2^50",
                  scores);
    throw InputError(text);
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
  if (g.attention) validate_heads(spec, g);
  validate_strategy(spec, g);
}

int64_t loopback_period(const CaseSpec& spec) {
  const Geometry g = geometry(spec.workload, spec.shape);
  const int64_t n = spec.world;
  int64_t period = std::gcd(std::gcd(g.m / n, g.d), std::gcd(g.f / n, g.ag_f / n));
  if (g.attention) period = std::gcd(period, g.seq);
  // Ulysses exchanges each rank's part of a sequence: those must be equal too.
  if (g.all_to_all) period = std::gcd(period, g.seq / n);
  if (period < 2) {
    throw InputError("loopback: the shards of this shape at world " + std::to_string(n) +
                     " have no common period above 1 (" + g.m_key + "/world, hidden, " + g.f_key +
                     "/world" + (g.attention ? ", seq" : "") +
                     "), so every input would be one value; choose sizes with a common factor");
  }
  return period;
}

namespace {

// What the halves of a layer's plan share while it is built.
struct LayerBuild {
  const CaseSpec& spec;
  Plan& plan;
  PlanBuilder& b;
  Geometry g;
  int64_t rank, m, d, f_local, ag_f_local, block;
  const Strategy& strategy;
  bool compute_only, comm_only;

  LayerBuild(const CaseSpec& s, Plan& p, PlanBuilder& builder, int r)
      : spec(s),
        plan(p),
        b(builder),
        g(geometry(s.workload, s.shape)),
        rank(r),
        m(g.m),
        d(g.d),
        f_local(g.f / s.world),
        ag_f_local(g.ag_f / s.world),
        block(g.m / s.world),
        strategy(*s.strategy.strategy),
        compute_only(strategy.role == StrategyRole::compute_reference),
        comm_only(strategy.role == StrategyRole::comm_reference) {}
  int param() const { return spec.strategy.param; }
};

// All-gather, then GEMM: Y = AllGather(X) * W1. Returns Y.
int build_all_gather_half(LayerBuild& l) {
  PlanBuilder& b = l.b;
  AgProblem ag;
  ag.x = b.buffer("x", l.m, l.d);
  ag.w = b.buffer("w1", l.d, l.ag_f_local);
  ag.y = b.buffer("y", l.m, l.ag_f_local);
  ag.tokens = l.m;
  ag.hidden = l.d;
  ag.ffn_local = l.ag_f_local;
  ag.block = l.block;
  ag.x_tensor = l.g.x;
  b.input({ag.x, l.rank * l.block, l.block, l.g.x, l.rank * l.block, 0});
  b.input({ag.w, 0, l.d, l.g.w1, 0, l.rank * l.ag_f_local, l.g.attention ? l.d : 0});
  l.strategy.all_gather_gemm(b, ag, l.param());
  // What each output must hold; comm_only has no GEMM, so its gathered X is what it makes.
  b.check(l.comm_only ? ag.x : ag.y, l.comm_only ? CheckKind::gathered : CheckKind::ag_out);
  return ag.y;
}

// The backward pass's start: dW2 = Y^T * dZ, and the forward input X gathered again for dW1,
// on the comm stream while dX computes. Returns the gathered X's buffer.
int build_backward_start(LayerBuild& l) {
  PlanBuilder& b = l.b;
  // dW2 needs every row of the gathered dZ; Y is stored transposed, as saved by the forward
  // pass for this GEMM.
  if (!l.comm_only) {
    const int yt = b.buffer("yt", l.f_local, l.m);
    const int dw2 = b.buffer("dw2", l.f_local, l.d);
    b.input({yt, 0, l.f_local, "YT", l.rank * l.f_local, 0});
    b.gemm({yt, 0, l.f_local}, {b.buffer("x", l.m, l.d), 0, l.m}, {dw2, 0, l.f_local}, false,
           "dW2 = Y^T * dZ");
    b.check(dw2, CheckKind::grad_w2);
  }
  const int forward_x = b.buffer("xf", l.m, l.d);
  b.input({forward_x, l.compute_only ? 0 : l.rank * l.block, l.compute_only ? l.m : l.block, "X",
           l.compute_only ? 0 : l.rank * l.block, 0});
  AgProblem gather;
  gather.x = forward_x;
  gather.tokens = l.m;
  gather.hidden = l.d;
  gather.block = l.block;
  l.strategy.all_gather_blocks(b, gather, l.param());
  if (l.comm_only) b.check(forward_x, CheckKind::gathered_forward);
  return forward_x;
}

// The reduce-scatter half's input H: the MLP's Y, attention's output O (computed whole, or
// slice by slice inside the reduce-scatter under a query split), or an input tensor.
int reduce_scatter_input(LayerBuild& l, int y, RsProblem& rs) {
  PlanBuilder& b = l.b;
  if (l.g.h_is_y) return y;  // the MLP's second GEMM consumes the first one's output
  if (!l.g.attention) {
    const int h = b.buffer("h", l.m, l.f_local);
    b.input({h, 0, l.m, l.g.h, 0, l.rank * l.f_local});
    return h;
  }
  const int o = b.buffer("o", l.m, l.f_local);
  if (l.comm_only) return o;
  auto attention = [g = l.g, y, o](PlanBuilder& builder, int64_t row, int64_t rows) {
    attention_rows(builder, g, y, o, row, rows);
  };
  // Query split interleaves the attention with the reduce-scatter; every other strategy runs
  // it whole between the two halves, as Megatron's row-parallel block does.
  if (l.strategy.query_split) {
    rs.produce_h = attention;
  } else {
    attention(b, 0, l.m);
  }
  b.check(o, CheckKind::attn_out);
  return o;
}

// GEMM, then reduce-scatter (or all-reduce): Z = ReduceScatter(H * W2), and dW1 after it in the
// backward pass.
void build_reduce_scatter_half(LayerBuild& l, int y, int forward_x) {
  PlanBuilder& b = l.b;
  const Geometry& g = l.g;
  RsProblem rs;
  rs.h = reduce_scatter_input(l, y, rs);
  rs.w = b.buffer("w2", l.f_local, l.d);
  // An all-reduce leaves every block on every rank: this rank's reduced block sits in place.
  rs.z = b.buffer("z", g.all_reduce ? l.m : l.block, l.d);
  rs.z_row = g.all_reduce ? l.rank * l.block : 0;
  rs.tokens = l.m;
  rs.hidden = l.d;
  rs.ffn_local = l.f_local;
  rs.block = l.block;
  b.input({rs.w, 0, l.f_local, g.w2, l.rank * l.f_local, 0});
  l.strategy.gemm_reduce_scatter(b, rs, l.param());
  if (g.all_reduce) {
    AgProblem blocks;
    blocks.x = rs.z;
    blocks.tokens = l.m;
    blocks.hidden = l.d;
    blocks.block = l.block;
    l.strategy.all_gather_blocks(b, blocks, l.param());
  }
  if (l.compute_only) {
    b.check(l.plan.buffer_id("p"), CheckKind::local_product);
  } else if (l.comm_only) {
    b.check(rs.z, g.all_reduce ? CheckKind::allreduced_input : CheckKind::reduced_input);
  } else {
    b.check(rs.z, g.all_reduce ? CheckKind::ar_out : CheckKind::rs_out);
  }
  if (g.backward && !l.comm_only) {
    const int dw1 = b.buffer("dw1", l.d, l.f_local);
    b.gemm_transposed_a({forward_x, 0, l.m}, {y, 0, l.m}, {dw1, 0, l.d}, "dW1 = X^T * dY");
    b.check(dw1, CheckKind::grad_w1);
  }
}

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
  LayerBuild layer(spec, plan, b, rank);
  if (layer.g.all_to_all) build_ulysses(b, spec, layer.g);
  const int y = layer.g.has_ag ? build_all_gather_half(layer) : -1;
  const int forward_x = layer.g.backward ? build_backward_start(layer) : -1;
  if (layer.g.has_rs) build_reduce_scatter_half(layer, y, forward_x);
  if (spec.loopback) check_loopback_transfers(spec, plan);
  return plan;
}

int plan_rotation_period(const CaseSpec& spec) {
  const Geometry g = geometry(spec.workload, spec.shape);
  // Only attention's tiling by sequence sees where a rank's rows fall: a query split computes
  // the rows of each destination's block sequence by sequence, and block r starts r * m / N
  // rows in, which repeats modulo the sequence every seq / gcd(m / N, seq) ranks (a bound:
  // test_sim_rotation.cpp checks it). Ulysses gives every rank the same share of every sequence.
  if (!g.attention || g.all_to_all || g.seq < 1 || spec.world < 1) return 1;
  const int64_t block = g.m / spec.world;
  // A block inside one sequence, or of whole sequences, is tiled alike wherever it starts.
  if (block < 1 || block % g.seq == 0 || g.seq % block == 0) return 1;
  const int64_t period = g.seq / std::gcd(block, g.seq);
  return period >= spec.world ? spec.world : static_cast<int>(period);
}

std::vector<Plan> make_plans(const CaseSpec& spec) {
  std::vector<Plan> plans;
  plans.reserve(static_cast<size_t>(spec.world));
  for (int r = 0; r < spec.world; ++r) plans.push_back(make_plan(spec, r));
  return plans;
}

void attention_rows(PlanBuilder& b, const Geometry& g, int qkv, int o, int64_t row, int64_t rows) {
  const int64_t width = b.cols(o);  // this rank's heads: D/N columns each of Q, K and V
  const int64_t dh = g.head_dim;
  if (dh < 1 || g.seq < 1) throw std::logic_error("attention_rows: shape not validated");
  const int heads = static_cast<int>(width / dh);
  const int64_t s = g.seq;
  // Queries are taken a tile at a time, as a fused attention kernel tiles them, so that the
  // scores of every local head stay within kScoresElements however long the sequence (Ulysses
  // runs 128K tokens: whole rows of scores would need 2^34 elements per head).
  const int64_t tile = std::clamp<int64_t>(kScoresElements / (heads * s), 1, s);
  // One tile's scores for every local head; reused tile after tile.
  const int scores = b.buffer("scores", heads * tile, s);
  for (int64_t first = row; first < row + rows;) {
    const int64_t seq_index = first / s;
    const int64_t seq_row = seq_index * s;  // keys and values: the whole sequence
    const int64_t last = std::min({row + rows, seq_row + s, first + tile});
    const int64_t q = last - first;
    const std::string where = "seq " + std::to_string(seq_index) + " rows " +
                              std::to_string(first) + ":" + std::to_string(last);
    GemmArgs qk;
    qk.a = {qkv, first, q, 0, dh};
    qk.b = {qkv, seq_row, s, width, dh};
    qk.c = {scores, 0, q};
    qk.transpose_b = true;
    qk.batch = heads;
    qk.a_step = {0, dh};
    qk.b_step = {0, dh};
    qk.c_step = {q, 0};
    b.gemm(qk, "scores = Q K^T, " + where);
    b.softmax({scores, 0, heads * q}, 1.0 / std::sqrt(static_cast<double>(dh)),
              "softmax, " + where);
    GemmArgs pv;
    pv.a = {scores, 0, q};
    pv.b = {qkv, seq_row, s, 2 * width, dh};
    pv.c = {o, first, q, 0, dh};
    pv.batch = heads;
    pv.a_step = {q, 0};
    pv.b_step = {0, dh};
    pv.c_step = {0, dh};
    b.gemm(pv, "O = P V, " + where);
    first = last;
  }
}

}  // namespace fob
