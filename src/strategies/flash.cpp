// Flash-Overlap (arXiv 2604.24013, Algorithms 1 and 2): a free-running P2P ring whose transfers
// wait only for the data they carry, in a rank-adaptive order so that neither the first nor the
// last computation touches communication. flash:m pipelines m sub-slices of every block.
#include <string>

#include "a2a_pieces.h"
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

namespace {

// The pieces Flash-All-to-All sends, in the order it sends them: exchange k = 1..N-1 goes to
// rank r+k, in m sub-slices of this rank's rows; `send(k, to, i)` builds sub-slice i of it.
template <typename Send>
void for_each_outgoing_piece(PlanBuilder& b, int m, Send&& send) {
  for (int k = 1; k < b.world(); ++k) {
    for (int i = 0; i < m; ++i) send(k, b.peer(k), i);
  }
}

}  // namespace

// Flash-All-to-All #1 (derived from the rank-adaptive rule; the paper's text on all-to-all
// could not be read, see docs/method.md#ulysses-ulysses): the piece for r+1, r+2, ..., r+N-1 is
// projected just before it is sent, each transfer free-running behind the next projection, and this
// rank's own heads come last, straight into qkv: the first GEMM waits for nothing and the last
// needs no transfer. Exchange k also receives rank r-k's piece of this rank's heads.
void flash_gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int m) {
  const int64_t rows = p.local_rows();
  b.reserve_tasks(2 * b.world() * m);
  for_each_outgoing_piece(b, m, [&](int k, int to, int i) {
    const int64_t begin = piece_begin(rows, m, i), sub = piece_rows(rows, m, i);
    const std::string piece = piece_name(to, i, m);
    project_qkv(b, p, to, begin, sub, "QKV for " + piece);
    exchange_qkv(b, p, to, b.peer(-k), begin, sub, k * m + i, "QKV to " + piece);
  });
  project_qkv_own(b, p, 0, rows, "QKV own heads");
}

// Flash-All-to-All #2: every piece of O goes out as soon as it exists (with query split, its
// attention is computed just before it is sent, this rank's own tokens last); the output
// projection starts on the own heads, which need no transfer, and then takes rank r-k's heads
// in the order their transfers were posted.
void flash_all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int m) {
  const int n = b.world();
  const int64_t rows = p.local_rows();
  b.reserve_tasks(2 * n * m);
  for_each_outgoing_piece(b, m, [&](int k, int to, int i) {
    // Sequence by sequence, so that each part's transfer hides behind the next one's
    // attention.
    for (const auto& [local, run] :
         sequence_runs(p, piece_begin(rows, m, i), piece_rows(rows, m, i))) {
      produce_o_for(b, p, to, local, run);
      exchange_o(b, p, to, b.peer(-k), local, run, kSecondAllToAllTag + k * m + i,
                 "O to " + piece_name(to, i, m) +
                     (p.batch > 1 ? " seq " + std::to_string(local / p.tokens) : ""));
    }
  });
  produce_o_for(b, p, b.rank(), 0, rows);
  project_out_own(b, p, 0, rows, false, "Z = O own heads * WO");
  for (int k = 1; k < n; ++k) {
    const int from = b.peer(-k);
    for (int i = 0; i < m; ++i) {
      const int64_t begin = piece_begin(rows, m, i), sub = piece_rows(rows, m, i);
      project_out(b, p, from, begin, sub, true, "Z += O heads " + piece_name(from, i, m));
    }
  }
}

extern constinit const Strategy kFlash =
    flash_entry("flash", "Flash-Overlap free-running ring, rank-adaptive order", false);

}  // namespace fob
