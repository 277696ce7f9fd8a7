// Algorithm decomposition (Wang et al., ASPLOS'23; XLA collective matmul): N lock-stepped ring
// steps. A step's transfer starts only when the previous step's compute and transfer have both
// finished; that loop-carried dependency is what Flash-Overlap removes.
#include <string>
#include <utility>
#include <vector>

#include "a2a_pieces.h"
#include "fob/strategy.h"
#include "pattern_set.h"

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

// Ulysses, #1: step 0 projects the piece for r+1; step k sends it (to r+k, receiving from r-k)
// while projecting the next one, this rank's own last. #2: step 0 multiplies the own heads
// while the first pair is exchanged; step k multiplies the heads received in step k. Every
// step waits for both tasks of the one before.
void gemm_all_to_all(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  const int n = b.world();
  const int64_t rows = p.local_rows();
  if (n == 1) return project_qkv_own(b, p, 0, rows, "QKV own heads");
  project_qkv(b, p, b.peer(1), 0, rows, "QKV for " + std::to_string(b.peer(1)));
  std::vector<int> previous;  // the exchanges of the step before
  for (int k = 1; k < n; ++k) {
    // The transfer waits for the piece it carries, the previous step's GEMM, by its data.
    std::vector<int> exchanged = exchange_qkv(b, p, b.peer(k), b.peer(-k), 0, rows, k,
                                              "QKV to " + std::to_string(b.peer(k)));
    const int first = b.task_count();
    if (k < n - 1) {
      project_qkv(b, p, b.peer(k + 1), 0, rows, "QKV for " + std::to_string(b.peer(k + 1)));
    } else {
      project_qkv_own(b, p, 0, rows, "QKV own heads");
    }
    for (int t = first; t < b.task_count(); ++t) {
      for (int x : previous) b.depend(t, x);
    }
    previous = std::move(exchanged);
  }
}

void all_to_all_gemm(PlanBuilder& b, const A2aProblem& p, int /*param*/) {
  const int n = b.world();
  const int64_t rows = p.local_rows();
  std::vector<int> last;  // the GEMMs of the latest step
  const int first = b.task_count();
  project_out_own(b, p, 0, rows, false, "Z = O own heads * WO");
  for (int t = first; t < b.task_count(); ++t) last.push_back(t);
  std::vector<int> older;  // the GEMMs of the step before it
  for (int k = 1; k < n; ++k) {
    const int from = b.peer(-k);
    // Exchange k runs beside the GEMM of step k-1 and waits for the one of step k-2.
    for (int x : exchange_o(b, p, b.peer(k), from, 0, rows, kSecondAllToAllTag + k,
                            "O to " + std::to_string(b.peer(k)))) {
      for (int g : older) b.depend(x, g);
    }
    older = std::move(last);
    last = {project_out(b, p, from, 0, rows, true, "Z += O heads " + std::to_string(from))};
  }
}

}  // namespace

extern constinit const Strategy kDecompose = with_patterns(
    {
        .name = "decompose",
        .summary = "lock-stepped ring (Wang et al., ASPLOS'23)",
        .role = StrategyRole::overlapping,
    },
    // Lock-stepped decomposition has no form for the mixture-of-experts layer's uneven blocks.
    {all_gather_gemm, gemm_reduce_scatter, gemm_all_to_all, all_to_all_gemm, all_gather_blocks,
     nullptr});

}  // namespace fob
