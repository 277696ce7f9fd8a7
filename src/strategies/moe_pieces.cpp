#include "moe_pieces.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "fob/moe_load.h"

namespace fob {
namespace {

std::vector<RowSpan> row_spans(const std::vector<MoeSpan>& spans) {
  std::vector<RowSpan> out;
  out.reserve(spans.size());
  for (const MoeSpan& s : spans) out.push_back({s.row, s.rows});
  return out;
}

}  // namespace

MoeBuffers moe_buffers(PlanBuilder& b, const MoeProblem& p, const MoeLayout& layout) {
  const int64_t sent = std::max<int64_t>(layout.send_total(), 1);
  const int64_t received = std::max<int64_t>(layout.recv_total(), 1);
  MoeBuffers m;
  m.xs = b.buffer("xs", sent, p.hidden);
  m.yc = b.buffer(kMoeCombineBuffer, sent, p.hidden);
  m.xe = b.buffer(kMoeDispatchBuffer, received, p.hidden);
  m.ue = b.buffer("ue", received, 2 * p.expert_ffn);
  m.ae = b.buffer("ae", received, p.expert_ffn);
  m.ye = b.buffer("ye", received, p.hidden);
  return m;
}

void gather_tokens(PlanBuilder& b, const MoeProblem& p, const MoeLayout& layout,
                   const MoeBuffers& m, int64_t row, int64_t rows, const std::string& label) {
  if (rows == 0) return;
  RowMap map;
  map.src.assign(layout.send_token.begin() + row, layout.send_token.begin() + row + rows);
  b.gather({m.xs, row, rows}, {p.x, 0, p.tokens}, std::move(map), false, label);
}

void expert_mlp(PlanBuilder& b, const MoeProblem& p, const MoeBuffers& m, int64_t local_expert,
                const ExpertRows& r, const std::string& label) {
  if (r.rows == 0) return;
  const int64_t d = p.hidden, f = p.expert_ffn;
  b.gemm({r.in, r.in_row, r.rows}, {p.w1, local_expert * d, d}, {m.ue, r.mid_row, r.rows}, false,
         label + " up");
  b.glu({m.ae, r.mid_row, r.rows}, {m.ue, r.mid_row, r.rows}, label + " glu");
  b.gemm({m.ae, r.mid_row, r.rows}, {p.w2, local_expert * f, f}, {r.out, r.out_row, r.rows}, false,
         label + " down");
}

namespace {

// Chunk c's dispatch (xs to the expert side) or, `back`, its combine (the expert side's outputs
// to yc): the same span pairs, one way or the other.
int chunk_all_to_all(PlanBuilder& b, const MoeLayout& layout, int src, int dst, int64_t c,
                     bool back, const std::string& label) {
  PeerSpans spans;
  for (int64_t j = 0; j < layout.world; ++j) {
    std::vector<RowSpan> sent = row_spans(layout.send_spans(c, j));
    std::vector<RowSpan> taken = row_spans(layout.recv_spans(c, j));
    spans.send.push_back(back ? std::move(taken) : std::move(sent));
    spans.recv.push_back(back ? std::move(sent) : std::move(taken));
  }
  return b.all_to_all_v(src, dst, std::move(spans), label);
}

}  // namespace

int dispatch_all_to_all(PlanBuilder& b, const MoeLayout& layout, const MoeBuffers& m, int64_t c,
                        const std::string& label) {
  return chunk_all_to_all(b, layout, m.xs, m.xe, c, false, label);
}

int combine_all_to_all(PlanBuilder& b, const MoeLayout& layout, const MoeBuffers& m, int64_t c,
                       const std::string& label) {
  return chunk_all_to_all(b, layout, m.ye, m.yc, c, true, label);
}

void combine_sum(PlanBuilder& b, const MoeProblem& p, const MoeLayout& layout, const MoeBuffers& m,
                 int64_t first, int64_t count, const std::string& label) {
  if (count == 0) return;
  const int64_t k = layout.top_k, t = layout.tokens_per_rank;
  for (int64_t q = 0; q < k; ++q) {
    RowMap map;
    for (int64_t i = first; i < first + count; ++i) {
      map.src.push_back(layout.combine_row[q * t + i]);
      map.weight.push_back(layout.combine_weight[q * t + i]);
    }
    b.gather({p.y, first, count}, {m.yc, 0, std::max<int64_t>(layout.send_total(), 1)},
             std::move(map), q > 0, label + " choice " + std::to_string(q));
  }
}

void moe_in_chunks(PlanBuilder& b, const MoeProblem& p, int chunks) {
  const MoeLayout layout = moe_layout(*p.routing, b.rank(), chunks);
  const MoeBuffers m = moe_buffers(b, p, layout);
  auto name = [chunks](const std::string& what, int64_t c) {
    return chunks == 1 ? what : what + " chunk " + std::to_string(c);
  };
  const int64_t n = layout.world, t = layout.tokens_per_rank;
  auto send_row = [&](int64_t c) {
    return c == chunks ? layout.send_total() : layout.send_offset(c, 0, 0);
  };
  for (int64_t c = 0; c < chunks; ++c) {
    gather_tokens(b, p, layout, m, send_row(c), send_row(c + 1) - send_row(c),
                  name("gather tokens", c));
  }
  auto sum = [&](int64_t c) {
    const int64_t first = moe_chunk_begin(t, chunks, c);
    combine_sum(b, p, layout, m, first, moe_chunk_begin(t, chunks, c + 1) - first,
                name("combine sum", c));
  };
  dispatch_all_to_all(b, layout, m, 0, name("dispatch", 0));
  for (int64_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) dispatch_all_to_all(b, layout, m, c + 1, name("dispatch", c + 1));
    for (int64_t l = 0; l < layout.local_experts; ++l) {
      int64_t rows = 0;
      for (int64_t i = 0; i < n; ++i) rows += layout.recv_rows(l, c, i);
      const int64_t row = layout.recv_offset(l, c, 0);
      expert_mlp(b, p, m, l, {m.xe, row, row, m.ye, row, rows},
                 name("expert " + std::to_string(l), c));
    }
    combine_all_to_all(b, layout, m, c, name("combine", c));
    if (c > 0) sum(c - 1);
  }
  sum(chunks - 1);
}

}  // namespace fob
