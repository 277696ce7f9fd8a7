// Flash-Overlap's rank-adaptive order on the mixture-of-experts layer: point-to-point exchanges
// instead of the two all-to-alls, so that each expert computes a source rank's tokens as soon as
// they have arrived and sends the results back as soon as they exist. The rank's own tokens need
// no transfer: its experts start on half of them while the first exchange runs, reading the
// dispatch buffer and writing straight into the combine's, so the first GEMM waits for nothing.
// Step s sends to r+s and receives from r-s; rank r-s's tokens are computed after step s's
// exchange and returned at once, and the other half of the own tokens is computed last, beside
// the last transfer, which carries only the last source's last results (CommFuse's order: the
// last computation's results need no transfer). flash:m cuts every source's rows into m pieces,
// each its own exchange and GEMMs.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "a2a_pieces.h"
#include "flash.h"
#include "moe_pieces.h"

namespace fob {
namespace {

// The expert side by source rank: source i's rows of every local expert together, expert by
// expert, so that one exchange carries them (the layout's expert order is by expert).
struct BySource {
  std::vector<int64_t> first;  // [i * (L + 1) + l]: first row of (i, l); l = L: source i's end
  int64_t experts = 0;
  int64_t row(int64_t i, int64_t l) const { return first[i * (experts + 1) + l]; }
};

BySource by_source(const MoeLayout& layout) {
  BySource s;
  s.experts = layout.local_experts;
  int64_t row = 0;
  for (int64_t i = 0; i < layout.world; ++i) {
    for (int64_t l = 0; l < s.experts; ++l) {
      s.first.push_back(row);
      row += layout.recv_rows(l, 0, i);
    }
    s.first.push_back(row);
  }
  return s;
}

// Rows [begin, end) of a source's block, expert by expert: `block(l)` is expert l's first row
// in the block's own numbering, `at(l)` where the block's rows of l lie in the buffers.
template <typename Run>
void expert_runs(int64_t experts, int64_t begin, int64_t end, const std::vector<int64_t>& block,
                 Run run) {
  for (int64_t l = 0; l < experts; ++l) {
    const int64_t lo = std::max(begin, block[l]), hi = std::min(end, block[l + 1]);
    if (lo < hi) run(l, lo, hi - lo);
  }
}

// One rank's flash plan of the layer: the layout's rows by destination and by source, and the
// steps that build it in order.
class FlashMoe {
 public:
  FlashMoe(PlanBuilder& b, const MoeProblem& p, int m)
      : b_(b),
        p_(p),
        m_(m),
        layout_(moe_layout(*p.routing, b.rank(), 1)),
        buf_(moe_buffers(b, p, layout_)),
        src_(by_source(layout_)),
        n_(b.world()),
        r_(b.rank()) {}

  // Tokens to the peers first, in the order the exchanges send them, then the own ones.
  void gather() {
    for (int s = 1; s <= n_; ++s) {
      const int j = b_.peer(s);
      gather_tokens(b_, p_, layout_, buf_, send_block(j), send_end(j) - send_block(j),
                    "gather tokens for " + std::to_string(j));
    }
  }

  void dispatch() {
    for (int s = 1; s < n_; ++s) {
      const int to = b_.peer(s), from = b_.peer(-s);
      const int64_t out_rows = send_end(to) - send_block(to);
      const int64_t in_rows = src_.row(from, experts()) - src_.row(from, 0);
      for (int q = 0; q < m_; ++q) {
        const auto [ob, oe] = piece(out_rows, q);
        const auto [ib, ie] = piece(in_rows, q);
        exchange({buf_.xs, send_block(to) + ob, oe - ob}, to,
                 {buf_.xe, src_.row(from, 0) + ib, ie - ib}, from, s * m_ + q,
                 "dispatch to " + piece_name(to, q, m_));
      }
    }
  }

  // The own tokens: read where they were gathered, results straight into the combine buffer.
  // Their first half runs while the first exchange travels, their second half while the last
  // combine does: neither the first GEMM nor the last transfer has nothing beside it.
  void own_half(int half) {
    const std::vector<int64_t> own = send_experts(r_);
    const int64_t split = n_ > 1 ? (own.back() + 1) / 2 : own.back();  // alone: nothing to hide
    const int64_t begin = half == 0 ? 0 : split, end = half == 0 ? split : own.back();
    expert_runs(experts(), begin, end, own, [&](int64_t l, int64_t row, int64_t rows) {
      const int64_t at = send_block(r_) + row;
      expert_mlp(b_, p_, buf_, l, {buf_.xs, at, src_.row(r_, 0) + row, buf_.yc, at, rows},
                 "expert " + std::to_string(l) + " own " + piece_name(r_, half, 2));
    });
  }

  // Each source's tokens as they land, their results back to it at once.
  void peers() {
    for (int s = 1; s < n_; ++s) {
      const int from = b_.peer(-s), to = b_.peer(s);
      const std::vector<int64_t> theirs = source_experts(from);
      const int64_t back_rows = send_end(to) - send_block(to);
      for (int q = 0; q < m_; ++q) {
        const auto [begin, end] = piece(theirs.back(), q);
        expert_runs(experts(), begin, end, theirs, [&](int64_t l, int64_t row, int64_t rows) {
          const int64_t at = src_.row(from, 0) + row;
          expert_mlp(b_, p_, buf_, l, {buf_.xe, at, at, buf_.ye, at, rows},
                     "expert " + std::to_string(l) + " from " + piece_name(from, q, m_));
        });
        // Back to the source: its results out to r-s, this rank's from r+s.
        const auto [rb, re] = piece(back_rows, q);
        exchange({buf_.ye, src_.row(from, 0) + begin, end - begin}, from,
                 {buf_.yc, send_block(to) + rb, re - rb}, to, kSecondAllToAllTag + s * m_ + q,
                 "combine to " + piece_name(from, q, m_));
      }
    }
  }

  void sum() { combine_sum(b_, p_, layout_, buf_, 0, layout_.tokens_per_rank, "combine sum"); }

 private:
  int64_t experts() const { return layout_.local_experts; }
  int64_t send_block(int j) const { return layout_.send_offset(0, j, 0); }
  int64_t send_end(int j) const { return j + 1 < n_ ? send_block(j + 1) : layout_.send_total(); }
  // Dispatch buffer rows of this rank's block for rank j, expert by expert (j's experts).
  std::vector<int64_t> send_experts(int j) const {
    std::vector<int64_t> rows;
    for (int64_t l = 0; l < moe_local_experts(layout_.experts, n_, j); ++l) {
      rows.push_back(layout_.send_offset(0, j, l) - send_block(j));
    }
    rows.push_back(send_end(j) - send_block(j));
    return rows;
  }
  std::vector<int64_t> source_experts(int i) const {
    std::vector<int64_t> rows;
    for (int64_t l = 0; l <= experts(); ++l) rows.push_back(src_.row(i, l) - src_.row(i, 0));
    return rows;
  }
  // Piece q of a block of `rows` rows: [begin, end) within it.
  std::pair<int64_t, int64_t> piece(int64_t rows, int q) const {
    return {piece_begin(rows, m_, q), piece_begin(rows, m_, q + 1)};
  }
  // Point-to-point halves: `out` rows to rank `to`, `in` rows from rank `from`; a side with
  // nothing is left out, and an exchange with nothing either way is no task.
  void exchange(View out, int to, View in, int from, int tag, const std::string& label) {
    if (out.rows == 0) to = -1;
    if (in.rows == 0) from = -1;
    if (to >= 0 || from >= 0) b_.exchange(out, to, in, from, tag, label);
  }

  PlanBuilder& b_;
  const MoeProblem& p_;
  const int m_;
  const MoeLayout layout_;
  const MoeBuffers buf_;
  const BySource src_;
  const int n_, r_;
};

}  // namespace

void flash_moe_layer(PlanBuilder& b, const MoeProblem& p, int m) {
  FlashMoe plan(b, p, m);
  plan.gather();
  plan.dispatch();
  plan.own_half(0);
  plan.peers();
  plan.own_half(1);
  plan.sum();
}

}  // namespace fob
