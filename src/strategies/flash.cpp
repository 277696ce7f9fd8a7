// Flash-Overlap (arXiv 2604.24013, Algorithms 1 and 2): a free-running P2P ring whose transfers
// wait only for the data they carry, in a rank-adaptive order so that neither the first nor the
// last computation touches communication. flash:m pipelines m sub-slices of every block.
#include <string>

#include "flash.h"

namespace fob {

// Flash-AG: compute blocks r, r-1, ..., r-N+1, forwarding each one as it is computed.
void flash_all_gather_gemm(PlanBuilder& b, const AgProblem& p, int m) {
  const int n = b.world();
  // Per sub-slice a GEMM, and an exchange in every step but the last.
  b.reserve_tasks((2 * n - 1) * m);
  for (int k = 0; k < n; ++k) {
    const int held = b.peer(-k);
    for (int i = 0; i < m; ++i) {
      const int64_t off = piece_begin(p.block, m, i);
      const int64_t sub = piece_rows(p.block, m, i);
      const int64_t row = held * p.block + off;
      const std::string piece = piece_name(held, i, m);
      if (k < n - 1) {
        b.exchange({p.x, row, sub}, b.peer(1), {p.x, b.peer(-k - 1) * p.block + off, sub},
                   b.peer(-1), k * m + i, "forward X block " + piece);
      }
      b.gemm({p.x, row, sub}, {p.w, 0, p.hidden}, {p.y, row, sub}, false, "Y block " + piece);
    }
  }
}

// Flash-RS: step 0 computes the partial for block r-1 with no communication; step k receives
// the running sum for block r-1-k while computing this rank's partial for it; the last step's
// block is this rank's own, so only a local add follows the last GEMM. With a producer of H
// (query split), each slice's rows of H are computed right before their GEMM, so the whole
// computation of the slice hides the previous slice's transfer.
void flash_gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int m) {
  const int n = b.world();
  const int part = n > 1 ? b.buffer("part", (p.block + m - 1) / m, p.hidden) : -1;
  // Per sub-slice a GEMM, and an exchange and an add in every step but the first (and whatever
  // a producer of H adds).
  b.reserve_tasks((3 * n - 2) * m);
  for (int k = 0; k < n; ++k) {
    const int slice = b.peer(-1 - k);
    for (int i = 0; i < m; ++i) {
      const int64_t off = piece_begin(p.block, m, i);
      const int64_t sub = piece_rows(p.block, m, i);
      const std::string piece = piece_name(slice, i, m);
      const View h{p.h, slice * p.block + off, sub};
      const View w{p.w, 0, p.ffn_local};
      const View out{p.z, p.z_row + off, sub};
      // Query split: this slice's rows of H are computed after the transfer it hides is posted.
      auto produce = [&] {
        if (p.produce_h) p.produce_h(b, h.row, h.rows);
      };
      if (n == 1) {
        produce();
        b.gemm(h, w, out, false, "Z block " + piece);
        continue;
      }
      // Each sub-slice runs its own ring; two sums each, one travelling and one being added to.
      const int acc[2] = {b.buffer("acc0_" + std::to_string(i), sub, p.hidden),
                          b.buffer("acc1_" + std::to_string(i), sub, p.hidden)};
      if (k == 0) {
        produce();
        b.gemm(h, w, {acc[0], 0, sub}, false, "partial " + piece);
        continue;
      }
      const View received{acc[k % 2], 0, sub};
      b.exchange({acc[(k - 1) % 2], 0, sub}, b.peer(1), received, b.peer(-1), (k - 1) * m + i,
                 "pass sums, receive block " + piece);
      produce();
      if (k < n - 1) {
        b.gemm(h, w, {part, 0, sub}, false, "partial " + piece);
        b.add(received, {part, 0, sub}, "sum += partial " + piece);
      } else {
        b.gemm(h, w, out, false, "own partial " + piece);
        b.add(out, received, "Z += received sum " + piece);
      }
    }
  }
}

extern constinit const Strategy kFlash = {
    .name = "flash",
    .summary = "Flash-Overlap free-running ring, rank-adaptive order",
    .param_name = "m",
    .default_param = 1,
    .role = StrategyRole::overlapping,
    .tune_params = {1, 2, 4, 8},
    .all_gather_gemm = flash_all_gather_gemm,
    .gemm_reduce_scatter = flash_gemm_reduce_scatter,
    // As DESIGN.md has it for GEMM + all-reduce.
    .all_gather_blocks = all_gather_blocks_direct,
};

}  // namespace fob
