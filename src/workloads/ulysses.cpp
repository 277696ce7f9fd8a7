// ulysses: DeepSpeed-Ulysses sequence parallelism. QKV = X_r * WQKV for every rank's heads,
// all-to-all to this rank's heads over every token, O_r as attn's, all-to-all back to this
// rank's tokens, Z_r = sum_j O_(tokens r, heads j) * WO_j (strategy.h's A2aProblem).
#include "fob/layer.h"

namespace fob {
namespace {

// Leaves the attention to a strategy that streams it, a block of keys at a time.
void stream_attention(A2aProblem& p, const Geometry& g) {
  p.attend = [g, qkv = p.qkv, o = p.o](PlanBuilder& builder, int64_t row, int64_t rows,
                                       int64_t key_row, int64_t key_rows, bool first) {
    attention_block(builder, g, qkv, o, row, rows, key_row, key_rows, first);
  };
  p.finish_o = [g, o = p.o](PlanBuilder& builder, int64_t row, int64_t rows) {
    attention_finish(builder, g, o, row, rows);
  };
}

void build_ulysses(PlanBuilder& b, const CaseSpec& spec, const Geometry& g) {
  const Strategy& strategy = *spec.strategy.strategy;
  const int n = spec.world;
  const int r = b.rank();
  A2aProblem p;
  p.batch = spec.shape.batch;
  p.seq = g.seq;
  p.tokens = g.seq / n;
  p.hidden = g.d;
  p.qkv_width = g.ag_f / n;
  p.head_width = g.d / n;
  const int64_t local = p.local_rows();
  p.x = b.buffer("x", local, g.d);
  p.wqkv = b.buffer("wqkv", g.d, g.ag_f);
  p.qkv_send = b.buffer("qkv_send", n * local, p.qkv_width);
  p.qkv = b.buffer("qkv", g.m, p.qkv_width);
  p.o = b.buffer("o", g.m, p.head_width);
  p.o_recv = b.buffer("o_recv", n * local, p.head_width);
  p.wo = b.buffer("wo", g.d, g.d);
  p.z = b.buffer("z", local, g.d);

  const bool compute_only = strategy.role == StrategyRole::compute_reference;
  const bool comm_only = strategy.role == StrategyRole::comm_reference;
  // Sequence by sequence, this rank's tokens of a global tensor into a buffer's rows.
  auto own_tokens = [&](int buffer, int64_t first_row, const char* tensor, int64_t col) {
    for (int64_t s = 0; s < p.batch; ++s) {
      const int64_t row = s * p.tokens;
      b.input({buffer, first_row + row, p.tokens, tensor, p.seq_row(r, row), col});
    }
  };
  // The reference modes leave out what would fill one of the exchanged buffers, so that
  // buffer is integer input data instead: QKV and OA stand for the projection and attention.
  if (comm_only) {
    for (int j = 0; j < n; ++j) own_tokens(p.qkv_send, p.peer_row(j, 0), "QKV", j * p.qkv_width);
    b.input({p.o, 0, g.m, "OA", 0, r * p.head_width});
  } else {
    own_tokens(p.x, 0, g.x, 0);
    b.input({p.wqkv, 0, g.d, g.w1, 0, 0, g.w1_select, /*weight=*/true});
    b.input({p.wo, 0, g.d, g.w2, 0, 0, 0, /*weight=*/true});
  }
  if (compute_only) {
    b.input({p.qkv, 0, g.m, "QKV", 0, r * p.qkv_width});
    for (int j = 0; j < n; ++j) own_tokens(p.o_recv, p.peer_row(j, 0), "OA", j * p.head_width);
  }

  const int param = spec.strategy.param;
  const bool streamed = strategy.streams_attention && !comm_only;
  if (streamed) stream_attention(p, g);
  strategy.gemm_all_to_all(b, p, param);
  if (!comm_only && !streamed) {
    auto attention = [g, qkv = p.qkv, o = p.o](PlanBuilder& builder, int64_t row, int64_t rows) {
      attention_rows(builder, g, qkv, o, row, rows);
    };
    // As for attn: query split interleaves the attention with the second exchange.
    if (strategy.query_split) {
      p.produce_o = attention;
    } else {
      attention(b, 0, g.m);
    }
  }
  strategy.all_to_all_gemm(b, p, param);

  if (comm_only) {
    b.check(p.qkv, CheckKind::heads_scattered);
    b.check(p.o_recv, CheckKind::tokens_gathered);
  } else if (compute_only) {
    b.check(p.qkv_send, CheckKind::qkv_projected);
    b.check(p.o, CheckKind::input_attn_out);
    b.check(p.z, CheckKind::input_out);
  } else {
    b.check(p.qkv, CheckKind::ag_out);
    b.check(p.o, CheckKind::attn_out);
    b.check(p.z, CheckKind::ulysses_out);
  }
}

// The heads as attn's, and every sequence split across the ranks as well.
void validate_ulysses(const CaseSpec& spec, const Geometry& g) {
  if (spec.shape.seq % spec.world != 0) {
    const std::string world = std::to_string(spec.world);
    throw InputError(
        "seq: " + std::to_string(spec.shape.seq) + " does not divide by the world size " + world +
        " (ulysses splits every sequence across ranks); choose a multiple of " + world);
  }
  validate_heads(spec, g);
}

// Each rank's part of a sequence is exchanged: those parts must repeat alike too.
int64_t sequence_part(const Geometry& g, int world) {
  return g.seq / world;
}

}  // namespace

// The same tensors as attn: ulysses splits the tokens instead of gathering them, and exchanges
// heads by all-to-all instead of the all-gather and reduce-scatter halves.
extern constinit const WorkloadDef kUlysses = {
    .name = "ulysses",
    .summary = "DeepSpeed-Ulysses attention: all-to-all to heads and back",
    .geometry = attention_geometry,
    .build = build_ulysses,
    .patterns = kGemmAllToAll | kAllToAllGemm,
    .computed_h = true,
    .has_heads = true,
    .validate = validate_ulysses,
    .loopback_extent = sequence_part,
    .tolerance = attention_check_tolerance,
    .small_shape = Shape{2, 24, 48, 48, 4},
};

}  // namespace fob
