// Algorithm decomposition (Wang et al., ASPLOS'23; XLA collective matmul): N lock-stepped ring
// steps. A step's transfer starts only when the previous step's compute and transfer have both
// finished; that loop-carried dependency is what Flash-Overlap removes.
#include <string>

#include "fob/strategy.h"

namespace fob {
namespace {

void all_gather_gemm(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  const int n = b.world();
  int previous_gemm = -1;
  for (int k = 0; k < n; ++k) {
    const int64_t held = b.peer(-k) * p.block;
    const std::string step = std::to_string(k);
    if (k < n - 1) {
      int x = b.exchange({p.x, held, p.block}, b.peer(1), {p.x, b.peer(-k - 1) * p.block, p.block},
                         b.peer(-1), k, "pass block " + std::to_string(b.peer(-k)));
      if (previous_gemm >= 0) b.depend(x, previous_gemm);
    }
    previous_gemm = b.gemm({p.x, held, p.block}, {p.w, 0, p.hidden}, {p.y, held, p.block}, false,
                           "Y block " + std::to_string(b.peer(-k)) + " (step " + step + ")");
  }
}

void gemm_reduce_scatter(PlanBuilder& b, const RsProblem& p, int /*param*/) {
  const int n = b.world();
  if (n == 1) {
    b.gemm({p.h, 0, p.tokens}, {p.w, 0, p.ffn_local}, {p.z, p.z_row, p.block}, false, "Z = H*W2");
    return;
  }
  // Step 0 sends zeros, so every step is the same: send the running sum, compute, add.
  const int zeros = b.buffer("zeros", p.block, p.hidden, BufferInit::zeros);
  const int acc[2] = {b.buffer("acc0", p.block, p.hidden), b.buffer("acc1", p.block, p.hidden)};
  const int part = b.buffer("part", p.block, p.hidden);
  View sent{zeros, 0, p.block};
  for (int k = 0; k < n; ++k) {
    const int slice = b.peer(-1 - k);
    View received = k == n - 1 ? View{p.z, p.z_row, p.block} : View{acc[k % 2], 0, p.block};
    b.exchange(sent, b.peer(1), received, b.peer(-1), k,
               "pass sum (step " + std::to_string(k) + ")");
    b.gemm({p.h, slice * p.block, p.block}, {p.w, 0, p.ffn_local}, {part, 0, p.block}, false,
           "partial for block " + std::to_string(slice));
    b.add(received, {part, 0, p.block}, "sum += partial " + std::to_string(slice));
    sent = received;
  }
}

// The lock-stepped ring passing each reduced block on; with no compute between steps the
// lock-step is the comm stream's own order.
void all_gather_blocks(PlanBuilder& b, const AgProblem& p, int /*param*/) {
  const int n = b.world();
  for (int k = 0; k < n - 1; ++k) {
    b.exchange({p.x, b.peer(-k) * p.block, p.block}, b.peer(1),
               {p.x, b.peer(-k - 1) * p.block, p.block}, b.peer(-1), kAllGatherTag + k,
               "pass Z block " + std::to_string(b.peer(-k)));
  }
}

}  // namespace

extern const Strategy kDecompose = {
    .name = "decompose",
    .summary = "lock-stepped ring (Wang et al., ASPLOS'23)",
    .role = StrategyRole::overlapping,
    .all_gather_gemm = all_gather_gemm,
    .gemm_reduce_scatter = gemm_reduce_scatter,
    .all_gather_blocks = all_gather_blocks,
};

}  // namespace fob
