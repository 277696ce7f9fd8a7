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
  const Geometry g = geometry(spec.workload, s);
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
  if (g.attention) {
    const std::string heads = std::to_string(g.heads);
    if (s.heads < 0) throw InputError("heads: " + std::to_string(s.heads) + " must be at least 1");
    if (s.heads == 0 && (g.heads < 1 || s.hidden % Shape::kDefaultHeadDim != 0)) {
      throw InputError(
          "heads: not given, and hidden " + std::to_string(s.hidden) +
          " is not a multiple of the default head size " + std::to_string(Shape::kDefaultHeadDim) +
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
    // A sequence's scores, seq x seq per head, are one buffer: past 2^50 elements its byte
    // count would wrap (config.cpp bounds the other tensors the same way).
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
  const int64_t block = g.m / spec.world;
  const Strategy* strategy = spec.strategy.strategy;
  if (strategy && !strategy_applies(*strategy, spec.workload)) {
    throw InputError("strategies: '" + spec.strategy.text + "' applies to workload " +
                     applicable_workloads(*strategy) + " only, not " + to_string(spec.workload));
  }
  if (strategy && strategy->param_name && spec.strategy.param > block) {
    throw InputError("strategies: '" + spec.strategy.text + "': " + strategy->param_name + " = " +
                     std::to_string(spec.strategy.param) + " exceeds the " + std::to_string(block) +
                     " rows each rank owns (" + g.m_key + "/world); valid " + strategy->param_name +
                     ": 1.." + std::to_string(block));
  }
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

  const Geometry g = geometry(spec.workload, spec.shape);
  const int64_t m = g.m;
  const int64_t d = g.d;
  const int64_t f_local = g.f / spec.world;
  const int64_t block = m / spec.world;
  const Strategy& strategy = *spec.strategy.strategy;
  const bool is_compute_only = strategy.role == StrategyRole::compute_reference;
  const bool is_comm_only = strategy.role == StrategyRole::comm_reference;

  const int64_t ag_f_local = g.ag_f / spec.world;
  if (g.all_to_all) build_ulysses(b, spec, g);
  int y = -1;
  if (g.has_ag) {
    AgProblem ag;
    ag.x = b.buffer("x", m, d);
    ag.w = b.buffer("w1", d, ag_f_local);
    ag.y = y = b.buffer("y", m, ag_f_local);
    ag.tokens = m;
    ag.hidden = d;
    ag.ffn_local = ag_f_local;
    ag.block = block;
    ag.x_tensor = g.x;
    b.input({ag.x, rank * block, block, g.x, rank * block, 0});
    b.input({ag.w, 0, d, g.w1, 0, rank * ag_f_local, g.attention ? d : 0});
    strategy.all_gather_gemm(b, ag, spec.strategy.param);
    // What each output must hold; comm_only has no GEMM, so its gathered X is what it makes.
    b.check(is_comm_only ? ag.x : ag.y, is_comm_only ? CheckKind::gathered : CheckKind::ag_out);
  }
  int forward_x = -1;
  if (g.backward) {
    // dW2 = Y^T * dZ needs every row of the gathered dZ; Y is stored transposed, as saved by
    // the forward pass for this GEMM.
    if (!is_comm_only) {
      const int yt = b.buffer("yt", f_local, m);
      const int dw2 = b.buffer("dw2", f_local, d);
      b.input({yt, 0, f_local, "YT", rank * f_local, 0});
      b.gemm({yt, 0, f_local}, {b.buffer("x", m, d), 0, m}, {dw2, 0, f_local}, false,
             "dW2 = Y^T * dZ");
      b.check(dw2, CheckKind::grad_w2);
    }
    // The forward input X is gathered again for dW1, on the comm stream while dX computes.
    forward_x = b.buffer("xf", m, d);
    b.input({forward_x, is_compute_only ? 0 : rank * block, is_compute_only ? m : block, "X",
             is_compute_only ? 0 : rank * block, 0});
    AgProblem gather;
    gather.x = forward_x;
    gather.tokens = m;
    gather.hidden = d;
    gather.block = block;
    strategy.all_gather_blocks(b, gather, spec.strategy.param);
    if (is_comm_only) b.check(forward_x, CheckKind::gathered_forward);
  }
  if (g.has_rs) {
    RsProblem rs;
    if (g.h_is_y) {
      rs.h = y;  // the MLP's second GEMM consumes the first one's output
    } else if (g.attention) {
      rs.h = b.buffer("o", m, f_local);
      if (!is_comm_only) {
        auto attention = [g, y, o = rs.h](PlanBuilder& builder, int64_t row, int64_t rows) {
          attention_rows(builder, g, y, o, row, rows);
        };
        // Query split interleaves the attention with the reduce-scatter; every other strategy
        // runs it whole between the two halves, as Megatron's row-parallel block does.
        if (strategy.query_split) {
          rs.produce_h = attention;
        } else {
          attention(b, 0, m);
        }
        b.check(rs.h, CheckKind::attn_out);
      }
    } else {
      rs.h = b.buffer("h", m, f_local);
      b.input({rs.h, 0, m, g.h, 0, rank * f_local});
    }
    rs.w = b.buffer("w2", f_local, d);
    // An all-reduce leaves every block on every rank: this rank's reduced block sits in place.
    rs.z = b.buffer("z", g.all_reduce ? m : block, d);
    rs.z_row = g.all_reduce ? rank * block : 0;
    rs.tokens = m;
    rs.hidden = d;
    rs.ffn_local = f_local;
    rs.block = block;
    b.input({rs.w, 0, f_local, g.w2, rank * f_local, 0});
    strategy.gemm_reduce_scatter(b, rs, spec.strategy.param);
    if (g.all_reduce) {
      AgProblem blocks;
      blocks.x = rs.z;
      blocks.tokens = m;
      blocks.hidden = d;
      blocks.block = block;
      strategy.all_gather_blocks(b, blocks, spec.strategy.param);
    }
    if (is_compute_only) {
      b.check(plan.buffer_id("p"), CheckKind::local_product);
    } else if (is_comm_only) {
      b.check(rs.z, g.all_reduce ? CheckKind::allreduced_input : CheckKind::reduced_input);
    } else {
      b.check(rs.z, g.all_reduce ? CheckKind::ar_out : CheckKind::rs_out);
    }
    if (g.backward && !is_comm_only) {
      const int dw1 = b.buffer("dw1", d, f_local);
      b.gemm_transposed_a({forward_x, 0, m}, {y, 0, m}, {dw1, 0, d}, "dW1 = X^T * dY");
      b.check(dw1, CheckKind::grad_w1);
    }
  }
  if (spec.loopback) {
    // To itself, a send only completes against the receive posted with it (one NCCL group, one
    // MPI request set): a half posted alone would wait forever.
    for (const Task& t : plan.tasks) {
      const bool p2p = t.is_transfer() && t.kind != TaskKind::collective;
      if (p2p && t.sends() != t.receives()) {
        throw InputError(
            "loopback: strategy '" + spec.strategy.text + "' has a one-sided transfer (task " +
            std::to_string(t.id) + " '" + t.label +
            "'), which a process cannot send to itself; loopback cannot run this strategy");
      }
    }
  }
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
