// Flash-Overlap's direct-to-owner form: exchange k = 1..N-1 pairs rank r with r+k and r-k,
// nothing is forwarded. It separates what the schedule gains from what the ring topology costs.
#include <string>

#include "flash.h"

namespace fob {
namespace {

// Own block first, then block r-k as exchange k lands.
void all_gather_gemm(PlanBuilder& b, const AgProblem& p, int m) {
  // Per sub-slice a GEMM, and an exchange for every block but the own one.
  b.reserve_tasks((2 * b.world() - 1) * m);
  for (int k = 0; k < b.world(); ++k) {
    const int from = b.peer(-k);
    for (int i = 0; i < m; ++i) {
      const int64_t off = piece_begin(p.block, m, i);
      const int64_t sub = piece_rows(p.block, m, i);
      const int64_t row = from * p.block + off;
      if (k > 0) {
        b.exchange({p.x, b.rank() * p.block + off, sub}, b.peer(k), {p.x, row, sub}, from,
                   k * m + i, "X block " + piece_name(from, i, m) + " from its owner");
      }
      b.gemm({p.x, row, sub}, {p.w, 0, p.hidden}, {p.y, row, sub}, false,
             "Y block " + piece_name(from, i, m));
    }
  }
}

// Partials for blocks r+1, r+2, ... go straight to their owners; the own block is computed
// last, then the received partials are added in the order they arrive. No GEMM waits for a
// transfer.
void gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int m) {
  const int n = b.world();
  const View w{p.w, 0, p.ffn_local};
  // Per sub-slice the own GEMM, and for every other rank a GEMM, an exchange and an add.
  b.reserve_tasks((3 * n - 2) * m);
  std::vector<int> received(n, -1);
  for (int k = 1; k < n; ++k) {
    const int owner = b.peer(k);
    const int part = b.buffer("part" + std::to_string(k), p.block, p.hidden);
    received[k] = b.buffer("recv" + std::to_string(k), p.block, p.hidden);
    for (int i = 0; i < m; ++i) {
      const int64_t off = piece_begin(p.block, m, i);
      const int64_t sub = piece_rows(p.block, m, i);
      b.gemm({p.h, owner * p.block + off, sub}, w, {part, off, sub}, false,
             "partial " + piece_name(owner, i, m));
      b.exchange({part, off, sub}, owner, {received[k], off, sub}, b.peer(-k), k * m + i,
                 "partial " + piece_name(owner, i, m) + " to its owner");
    }
  }
  for (int i = 0; i < m; ++i) {
    const int64_t off = piece_begin(p.block, m, i);
    const int64_t sub = piece_rows(p.block, m, i);
    b.gemm({p.h, b.rank() * p.block + off, sub}, w, {p.z, p.z_row + off, sub}, false,
           "own partial " + piece_name(b.rank(), i, m));
  }
  for (int k = 1; k < n; ++k) {
    for (int i = 0; i < m; ++i) {
      const int64_t off = piece_begin(p.block, m, i);
      const int64_t sub = piece_rows(p.block, m, i);
      b.add({p.z, p.z_row + off, sub}, {received[k], off, sub},
            "Z += partial from " + std::to_string(b.peer(-k)));
    }
  }
}

}  // namespace

// The reduced blocks go straight to every other rank, sub-slice by sub-slice as they complete.
void all_gather_blocks_direct(PlanBuilder& b, const AgProblem& p, int m) {
  b.reserve_tasks((b.world() - 1) * m);  // an exchange per sub-slice and other rank
  for (int i = 0; i < m; ++i) {
    const int64_t off = piece_begin(p.block, m, i);
    const int64_t sub = piece_rows(p.block, m, i);
    for (int k = 1; k < b.world(); ++k) {
      b.exchange({p.x, b.rank() * p.block + off, sub}, b.peer(k),
                 {p.x, b.peer(-k) * p.block + off, sub}, b.peer(-k), kAllGatherTag + k * m + i,
                 "Z block " + piece_name(b.peer(-k), i, m) + " from its owner");
    }
  }
}

extern constinit const Strategy kFlashDirect = with_patterns(
    {
        .name = "flash_direct",
        .summary = "direct-to-owner pairwise exchanges",
        .param_name = "m",
        .default_param = 1,
        .role = StrategyRole::overlapping,
    },
    // An all-to-all is direct-to-owner already: Flash-All-to-All's pairs send each piece
    // straight to its owner, and nothing is forwarded, so the schedule is flash's; so are the
    // mixture-of-experts layer's exchanges.
    {all_gather_gemm, gemm_reduce_scatter, flash_gemm_all_to_all, flash_all_to_all_gemm,
     all_gather_blocks_direct, flash_moe_layer});

}  // namespace fob
