// A strategy turns the two collective-bearing halves of a workload into tasks. Each strategy
// lives in one file under src/strategies/ and knows nothing of backends.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fob/moe.h"
#include "fob/plan_builder.h"

namespace fob {

// Y[M, Fn] = AllGather(X)[M, D] * W[D, Fn]. `x` holds M rows; this rank's block
// (rows rank*M/N ...) is already in place, the others arrive by communication.
struct AgProblem {
  int x = -1, w = -1, y = -1;
  int64_t tokens = 0, hidden = 0, ffn_local = 0;
  int64_t block = 0;           // rows per rank: M / N
  const char* x_tensor = "X";  // the global tensor `x` gathers, for reference modes' inputs
  // Nothing but this pattern's own tasks reads `x`, so a strategy may lay its rows out as its
  // collectives want them (PlanBuilder::relayout); false where a later GEMM reads the gathered
  // rows in the tensor's order (mlp_bwd's weight gradients).
  bool x_layout_free = false;
};

// Z[M/N, D] = rows `rank` of sum over ranks of H[M, Fn] * W[Fn, D].
struct RsProblem {
  int h = -1, w = -1, z = -1;
  int64_t tokens = 0, hidden = 0, ffn_local = 0;
  int64_t block = 0;  // rows per rank: M / N
  int64_t z_row = 0;  // where this rank's block starts in z (gemm_ar's z holds every block)
  // Set for query-split strategies when the rows of `h` are computed, not input (attention's
  // output O): emits the tasks that compute rows [row, row + rows) of h. A strategy that
  // splits queries calls it just before the GEMM that consumes those rows.
  std::function<void(PlanBuilder& builder, int64_t row, int64_t rows)> produce_h;
};

// Ulysses (DeepSpeed's sequence parallelism): rank r holds S/N `tokens` of each of `batch`
// sequences, L = batch * tokens local rows. The QKV projection makes, for every rank j, the
// local rows' Q, K and V of j's heads; all-to-all #1 gives each rank its heads over every
// token; all-to-all #2 returns the attention output O to the tokens' owners; Z = sum over j of
// O_j (this rank's tokens, rank j's heads) * WO_j.
// Two row layouts: "peer major" rows j*L + b*tokens + t (one block per rank j) and "sequence
// major" rows b*seq + j*tokens + t (whole sequences, batch-major as every [M, .] tensor).
struct A2aProblem {
  int x = -1;         // [L, D] this rank's tokens
  int wqkv = -1;      // [D, N*G] every rank's Q | K | V columns, rank j's at j*G
  int qkv_send = -1;  // [N*L, G] peer major: what goes to rank j
  int qkv = -1;       // [M, G] sequence major: this rank's heads over every token
  int o = -1;         // [M, Dn] sequence major: attention output of this rank's heads
  int o_recv = -1;    // [N*L, Dn] peer major: rank j's heads for this rank's tokens
  int wo = -1;        // [D, D] rank j's heads are rows j*Dn
  int z = -1;         // [L, D] output
  int64_t batch = 0, seq = 0, tokens = 0, hidden = 0;
  int64_t qkv_width = 0;   // G = 3D/N
  int64_t head_width = 0;  // Dn = D/N
  // Set for query-split strategies: emits the tasks computing rows [row, row + rows) of `o`.
  std::function<void(PlanBuilder& builder, int64_t row, int64_t rows)> produce_o;
  // Set for strategies that stream the attention (Strategy::streams_attention). attend: the
  // keys and values of sequence-major rows [key_row, key_row + key_rows) fold into the running
  // attention of the query rows [row, row + rows) of the same sequence (`first`: those
  // queries' first keys); finish_o: rows of `o` that have every key of their sequence are
  // normalised.
  std::function<void(PlanBuilder& builder, int64_t row, int64_t rows, int64_t key_row,
                     int64_t key_rows, bool first)>
      attend;
  std::function<void(PlanBuilder& builder, int64_t row, int64_t rows)> finish_o;

  int64_t local_rows() const { return batch * tokens; }
  int64_t peer_row(int j, int64_t local) const { return j * local_rows() + local; }
  // Where local row `local` (sequence local / tokens) of rank j lies in a sequence-major buffer.
  int64_t seq_row(int j, int64_t local) const {
    return local / tokens * seq + j * tokens + local % tokens;
  }
};

// A mixture-of-experts layer (workload moe, include/fob/moe.h): this rank's T tokens `x`
// [T, D] go to their top-k experts' ranks (dispatch), each local expert l runs its MLP over the
// rows it received — up = rows * W1_l [D, 2F] (gate and up projection side by side), a = glu(up),
// out = a * W2_l [F, D] — and the results come back (combine) to be summed into `y` [T, D],
// each weighted by its routing weight. Who sends what to whom is data, the same on every rank:
// `routing`, laid out for a chunk count by moe_layout.
struct MoeProblem {
  int x = -1;   // [T, D] this rank's tokens
  int w1 = -1;  // [local experts * D, 2F]: local expert l's rows from l * D
  int w2 = -1;  // [local experts * F, D]: local expert l's rows from l * F
  int y = -1;   // [T, D] output
  int64_t tokens = 0, hidden = 0, expert_ffn = 0;
  const MoeRouting* routing = nullptr;
};

// Tags of an all-reduce's all-gather half, apart from its reduce-scatter half's.
inline constexpr int kAllGatherTag = 1 << 16;

// What a strategy is to the rest of fobench: the metrics, reports, tuning and calibration ask
// the role, never the name, so a new strategy is one file and one line in registry.cpp.
enum class StrategyRole : uint8_t {
  compute_reference,  // the GEMMs alone, unsliced: T_comp
  comm_reference,     // the baseline's transfers alone: T_comm, and its busbw (docs/metrics.md)
  serial_baseline,    // no overlap: what speedups are measured against
  overlapping,        // compute and transfers run at once
};

struct Strategy {
  const char* name = nullptr;
  const char* summary = nullptr;
  // Strategies with a parameter accept "name:P"; it must divide the rows of one rank's block.
  const char* param_name = nullptr;  // nullptr when the strategy takes none
  int default_param = 1;
  StrategyRole role = StrategyRole::overlapping;
  // --auto-slices times these parameter values (those up to the rows a rank owns), 0-ended;
  // none: the strategy is not tuned.
  std::array<int, 8> tune_params{};
  // The collective patterns a strategy implements; a workload (workload.h) composes its plan of
  // them and names those it uses (Pattern bits), so a new workload over these patterns needs
  // nothing here. nullptr: the strategy does not run workloads that use the pattern.
  void (*all_gather_gemm)(PlanBuilder& builder, const AgProblem& problem, int param) = nullptr;
  void (*gemm_reduce_scatter)(PlanBuilder& builder, const RsProblem& problem, int param) = nullptr;
  // GEMM then all-to-all, and all-to-all then GEMM (ulysses' QKV projection + all-to-all #1,
  // all-to-all #2 + output projection).
  void (*gemm_all_to_all)(PlanBuilder& builder, const A2aProblem& problem, int param) = nullptr;
  void (*all_to_all_gemm)(PlanBuilder& builder, const A2aProblem& problem, int param) = nullptr;
  // All-gather of the blocks of `x` in place, no GEMM: the second half of an all-reduce
  // decomposed as reduce-scatter + all-gather (gemm_ar).
  void (*all_gather_blocks)(PlanBuilder& builder, const AgProblem& problem, int param) = nullptr;
  // The mixture-of-experts layer: dispatch, the experts' MLPs and combine (moe).
  void (*moe_layer)(PlanBuilder& builder, const MoeProblem& problem, int param) = nullptr;
  // How busbw prices the strategy's transfers, as nccl-tests prices a collective: the size S of
  // the collective from the bytes each rank sends (algbw = S / T), and busbw = algbw * factor.
  // nullptr: no busbw (only transfers timed alone measure the link).
  double (*collective_bytes)(double sent_per_rank, int world) = nullptr;
  double (*busbw_factor)(int world) = nullptr;
  // Query split (the paper's Algorithm 4): the strategy interleaves the computation of H
  // (RsProblem::produce_h) with its reduce-scatter, so it applies only where H is computed.
  bool query_split = false;
  // The strategy computes the attention itself, block of keys by block (A2aProblem::attend),
  // so it applies only where the attention output is computed.
  bool streams_attention = false;

  // Reference modes (compute_only, comm_only) declare their own output checks.
  bool is_reference() const {
    return role == StrategyRole::compute_reference || role == StrategyRole::comm_reference;
  }
  std::vector<int> tuning() const {
    std::vector<int> out;
    for (int p : tune_params) {
      if (p > 0) out.push_back(p);
    }
    return out;
  }
};

// Whether `strategy` can run `workload`: it has every collective pattern the workload uses, and
// a query split needs a computed H (WorkloadDef::computed_h).
bool strategy_applies(const Strategy& strategy, Workload workload);
// The workloads it applies to, comma separated, for messages.
std::string applicable_workloads(const Strategy& strategy);

// All-gather of blocks as direct exchanges with every other rank, sub-slice by sub-slice (m):
// flash_direct's own, and flash's for an all-reduce's second half.
void all_gather_blocks_direct(PlanBuilder& builder, const AgProblem& problem, int m);

// Every strategy built in, reference modes included, in the order reports list them, then any
// registered since.
const std::vector<const Strategy*>& all_strategies();
// Adds a strategy defined elsewhere (a test's toy, a plugin): from then on every part of
// fobench runs, reports, tunes, calibrates and simulates it like a built-in one. `strategy`
// must outlive every use; a name taken already is a logic_error.
void register_strategy(const Strategy& strategy);

// "slicing:4" -> slicing with param 4. Throws InputError naming the valid choices.
StrategySpec parse_strategy(const std::string& text);

// The strategy a spec as written names ("slicing:4" -> slicing), nullptr when none does (a
// file from another version); its role, overlapping for an unknown one.
const Strategy* find_strategy(const std::string& text);
StrategyRole strategy_role(const std::string& text);
// The name of the strategy that plays `role` (the first in the table), to look its case up.
const char* role_name(StrategyRole role);
// The reference modes every run measures beside the strategies asked for, in table order.
std::vector<std::string> reference_strategies();
// What `fobench run` measures when no strategy list is given.
std::vector<std::string> default_strategies();
// Piece i of `parts` near-equal pieces of `rows` rows (sizes differ by at most one row), so a
// slice count need not divide the rows each rank owns.
inline int64_t piece_begin(int64_t rows, int parts, int i) {
  return rows * i / parts;
}
inline int64_t piece_rows(int64_t rows, int parts, int i) {
  return piece_begin(rows, parts, i + 1) - piece_begin(rows, parts, i);
}

// "3" or, when a block is split into several sub-slices, "3.1": for task labels.
std::string piece_name(int block, int sub, int subs);

// The strategies a user may ask for, for error messages: "baseline, slicing:C, ...".
std::string strategy_choices();

}  // namespace fob
