#include "fob/layer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "fob/tolerance.h"

namespace fob {

Layer::Layer(PlanBuilder& builder, const CaseSpec& s, const Geometry& geometry)
    : spec(s),
      b(builder),
      g(geometry),
      rank(builder.rank()),
      m(g.m),
      d(g.d),
      f_local(g.f / s.world),
      ag_f_local(g.ag_f / s.world),
      block(g.m / s.world),
      strategy(*s.strategy.strategy),
      compute_only(strategy.role == StrategyRole::compute_reference),
      comm_only(strategy.role == StrategyRole::comm_reference) {}

int all_gather_half(Layer& l, bool x_reused) {
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
  ag.x_layout_free = !x_reused;
  b.input({ag.x, l.rank * l.block, l.block, l.g.x, l.rank * l.block, 0});
  b.input({ag.w, 0, l.d, l.g.w1, 0, l.rank * l.ag_f_local, l.g.w1_select, /*weight=*/true});
  l.strategy.all_gather_gemm(b, ag, l.param());
  // What each output must hold; comm_only has no GEMM, so its gathered X is what it makes.
  b.check(l.comm_only ? ag.x : ag.y, l.comm_only ? CheckKind::gathered : CheckKind::ag_out);
  return ag.y;
}

void build_all_gather_gemm(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  Layer layer(b, spec, g);
  all_gather_half(layer);
}

void build_gemm_reduce_scatter(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  Layer layer(b, spec, g);
  reduce_scatter_half(layer, input_h(layer), Reduction::scatter);
}

int backward_start(Layer& l) {
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

void weight_gradient_w1(Layer& l, int forward_x, int dy) {
  if (l.comm_only) return;
  const int dw1 = l.b.buffer("dw1", l.d, l.f_local);
  l.b.gemm_transposed_a({forward_x, 0, l.m}, {dy, 0, l.m}, {dw1, 0, l.d}, "dW1 = X^T * dY");
  l.b.check(dw1, CheckKind::grad_w1);
}

HInput input_h(Layer& l) {
  const int h = l.b.buffer("h", l.m, l.f_local);
  l.b.input({h, 0, l.m, l.g.h, 0, l.rank * l.f_local});
  return {h, nullptr};
}

HInput attention_h(Layer& l, int qkv) {
  PlanBuilder& b = l.b;
  const int o = b.buffer("o", l.m, l.f_local);
  if (l.comm_only) return {o, nullptr};
  auto attention = [g = l.g, qkv, o](PlanBuilder& builder, int64_t row, int64_t rows) {
    attention_rows(builder, g, qkv, o, row, rows);
  };
  // Query split interleaves the attention with the reduce-scatter; every other strategy runs
  // it whole between the two halves, as Megatron's row-parallel block does.
  HInput h{o, nullptr};
  if (l.strategy.query_split) {
    h.produce = attention;
  } else {
    attention(b, 0, l.m);
  }
  b.check(o, CheckKind::attn_out);
  return h;
}

int reduce_scatter_half(Layer& l, const HInput& h, Reduction reduction) {
  PlanBuilder& b = l.b;
  const bool all = reduction == Reduction::all;
  RsProblem rs;
  rs.h = h.buffer;
  rs.produce_h = h.produce;
  rs.w = b.buffer("w2", l.f_local, l.d);
  // An all-reduce leaves every block on every rank: this rank's reduced block sits in place.
  rs.z = b.buffer("z", all ? l.m : l.block, l.d);
  rs.z_row = all ? l.rank * l.block : 0;
  rs.tokens = l.m;
  rs.hidden = l.d;
  rs.ffn_local = l.f_local;
  rs.block = l.block;
  b.input({rs.w, 0, l.f_local, l.g.w2, l.rank * l.f_local, 0, 0, /*weight=*/true});
  l.strategy.gemm_reduce_scatter(b, rs, l.param());
  if (all) {
    AgProblem blocks;
    blocks.x = rs.z;
    blocks.tokens = l.m;
    blocks.hidden = l.d;
    blocks.block = l.block;
    l.strategy.all_gather_blocks(b, blocks, l.param());
  }
  if (l.compute_only) {
    b.check(b.buffer_id("p"), CheckKind::local_product);
  } else if (l.comm_only) {
    b.check(rs.z, all ? CheckKind::allreduced_input : CheckKind::reduced_input);
  } else {
    b.check(rs.z, all ? CheckKind::ar_out : CheckKind::rs_out);
  }
  return rs.z;
}

Geometry attention_geometry(const Shape& shape) {
  Geometry g = layer_geometry(shape);
  g.f = shape.hidden;
  g.ag_f = 3 * shape.hidden;
  g.f_key = "hidden";
  g.w1 = "WQKV";
  g.h = "O";
  g.w2 = "WO";
  // WQKV selects signed columns of X, so that the scores stay small and the softmax defined.
  g.w1_select = shape.hidden;
  g.h_source = Geometry::HSource::attention;
  return g;
}

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

Tolerance attention_check_tolerance(const Plan& plan, CheckKind kind) {
  // What the attention's softmax feeds; ulysses' compute_only feeds its output projection
  // integer input instead (input_out), so that check stays exact.
  const bool softmax = kind == CheckKind::attn_out || kind == CheckKind::rs_out ||
                       kind == CheckKind::local_product || kind == CheckKind::ulysses_out ||
                       kind == CheckKind::input_attn_out;
  if (!softmax) return {verify_tolerance(plan.dtype, plan.world), false};
  // A streamed attention (online softmax) adds its rescales' roundings: as many blocks of keys
  // as the plan folds into its first query row.
  int64_t blocks = 0;
  for (const Task& t : plan.tasks) {
    blocks += t.kind == TaskKind::online_softmax && t.a.row == 0;
  }
  return {attention_tolerance(plan.dtype, plan.world, plan.shape.seq, plan.shape.hidden) +
              streamed_attention_tolerance(plan.dtype, blocks),
          true};
}

namespace {

// One tile of the attention: queries [q_row, q_row + q) against keys [key_row, key_row + keys)
// of `qkv` (Q, K and V of every local head side by side), every head in one batched GEMM.
// score_cols: the columns of `scores` the tile fills, 0 for all of them.
struct AttentionTile {
  int qkv, o, scores;
  int64_t width, dh;
  int heads;
  int64_t q_row, q, key_row, keys, score_cols;
};

int scores_gemm(PlanBuilder& b, const AttentionTile& t, const std::string& where) {
  GemmArgs qk;
  qk.a = {t.qkv, t.q_row, t.q, 0, t.dh};
  qk.b = {t.qkv, t.key_row, t.keys, t.width, t.dh};
  qk.c = {t.scores, 0, t.q, 0, t.score_cols};
  qk.transpose_b = true;
  qk.batch = t.heads;
  qk.a_step = {0, t.dh};
  qk.b_step = {0, t.dh};
  qk.c_step = {t.q, 0};
  return b.gemm(qk, "scores = Q K^T, " + where);
}

int values_gemm(PlanBuilder& b, const AttentionTile& t, bool accumulate, const std::string& where) {
  GemmArgs pv;
  pv.a = {t.scores, 0, t.q, 0, t.score_cols};
  pv.b = {t.qkv, t.key_row, t.keys, 2 * t.width, t.dh};
  pv.c = {t.o, t.q_row, t.q, 0, t.dh};
  pv.accumulate = accumulate;
  pv.batch = t.heads;
  pv.a_step = {t.q, 0};
  pv.b_step = {0, t.dh};
  pv.c_step = {0, t.dh};
  return b.gemm(pv, (accumulate ? "O += P V, " : "O = P V, ") + where);
}

}  // namespace

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
    const AttentionTile tile_of{qkv, o, scores, width, dh, heads, first, q, seq_row, s, 0};
    scores_gemm(b, tile_of, where);
    b.softmax({scores, 0, heads * q}, 1.0 / std::sqrt(static_cast<double>(dh)),
              "softmax, " + where);
    values_gemm(b, tile_of, false, where);
    first = last;
  }
}

namespace {

// The running state of the streamed attention: per query row, each local head's maximum, then
// each one's sum.
int attention_state(PlanBuilder& b, const Geometry& g, int o) {
  const int64_t heads = b.cols(o) / g.head_dim;
  return b.buffer("attn_state", b.rows(o), 2 * heads);
}

}  // namespace

void attention_block(PlanBuilder& b, const Geometry& g, int qkv, int o, int64_t row, int64_t rows,
                     int64_t key_row, int64_t key_rows, bool first) {
  const int64_t width = b.cols(o), dh = g.head_dim;
  if (dh < 1 || g.seq < 1) throw std::logic_error("attention_block: shape not validated");
  const int heads = static_cast<int>(width / dh);
  const int64_t s = g.seq;
  // The scores buffer and tile are attention_rows': a block's keys are at most a sequence.
  const int64_t tile = std::clamp<int64_t>(kScoresElements / (heads * s), 1, s);
  const int scores = b.buffer("scores", heads * tile, s);
  const int state = attention_state(b, g, o);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  for (int64_t first_q = row; first_q < row + rows;) {
    const int64_t q = std::min(tile, row + rows - first_q);
    const std::string where = "rows " + std::to_string(first_q) + ":" +
                              std::to_string(first_q + q) + " keys " + std::to_string(key_row) +
                              ":" + std::to_string(key_row + key_rows);
    const AttentionTile tile_of{qkv,     o, scores,  width,    dh,      heads,
                                first_q, q, key_row, key_rows, key_rows};
    scores_gemm(b, tile_of, where);
    b.online_softmax({scores, 0, heads * q, 0, key_rows}, {state, first_q, q}, {o, first_q, q},
                     heads, dh, scale, first, "online softmax, " + where);
    values_gemm(b, tile_of, !first, where);
    first_q += q;
  }
}

void attention_finish(PlanBuilder& b, const Geometry& g, int o, int64_t row, int64_t rows) {
  const int64_t dh = g.head_dim;
  const int heads = static_cast<int>(b.cols(o) / dh);
  b.softmax_finish(
      {o, row, rows}, {attention_state(b, g, o), row, rows}, heads, dh,
      "O /= softmax sums, rows " + std::to_string(row) + ":" + std::to_string(row + rows));
}

}  // namespace fob
