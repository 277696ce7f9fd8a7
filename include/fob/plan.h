// A Plan is plain data: per rank, an ordered list of tasks on two streams with explicit
// dependencies. Strategies produce plans; the executor and the simulator consume them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "fob/types.h"

namespace fob {

enum class StreamId : uint8_t { compute = 0, comm = 1 };
inline constexpr int kNumStreams = 2;
const char* to_string(StreamId stream);

// online_softmax and softmax_finish are the streamed attention's (FlashAttention's online
// softmax): a block of keys at a time, the running maximum and sum kept per query row and head.
// gather and glu are the mixture-of-experts layer's: its token permutations and weighted
// combine, and its experts' gated activation.
enum class TaskKind : uint8_t {
  gemm,
  send,
  recv,
  exchange,
  collective,
  add,
  copy,
  softmax,
  online_softmax,
  softmax_finish,
  gather,
  glu
};
// A new kind goes last (results files store kinds by number) and becomes the last here.
inline constexpr int kNumTaskKinds = static_cast<int>(TaskKind::glu) + 1;

// Everything the rest of fobench asks of a task kind, in one place. A new kind fills its row in
// task_kind_info; the backends' and the simulator's switches over TaskKind have no default, so
// the compiler names each one that misses it.
struct TaskKindInfo {
  const char* name = "?";  // in plans, results files' enums, reports and pictures
  // Moves bytes between ranks, on the comm stream; else it computes on its own rank.
  bool transfer = false;
  bool send_half = false;  // a point-to-point half it can hold (sends(), receives())
  bool recv_half = false;
  // Memory bound, priced by memory_elements() (a GEMM is priced by its FLOPs).
  bool elementwise = false;
  // Its fill in timelines: compute kinds in blues and greens, transfers in warm colours (red is
  // kept for waits and exposed communication, so that those stand out).
  const char* colour = "#999999";
};

constexpr TaskKindInfo task_kind_info(TaskKind kind) {
  switch (kind) {
    case TaskKind::gemm:
      return {"gemm", false, false, false, false, "#4e79a7"};
    case TaskKind::send:
      return {"send", true, true, false, false, "#f28e2b"};
    case TaskKind::recv:
      return {"recv", true, false, true, false, "#edc948"};
    case TaskKind::exchange:
      return {"exchange", true, true, true, false, "#b07aa1"};
    case TaskKind::collective:
      return {"collective", true, false, false, false, "#9c6b30"};
    case TaskKind::add:
      return {"add", false, false, false, true, "#76b7b2"};
    case TaskKind::copy:
      return {"copy", false, false, false, true, "#59a14f"};
    case TaskKind::softmax:
      return {"softmax", false, false, false, true, "#8cd17d"};
    case TaskKind::online_softmax:
      return {"online_softmax", false, false, false, true, "#2f6f4f"};
    case TaskKind::softmax_finish:
      return {"softmax_finish", false, false, false, true, "#a0cbe8"};
    case TaskKind::gather:
      return {"gather", false, false, false, true, "#86bcb6"};
    case TaskKind::glu:
      return {"glu", false, false, false, true, "#499894"};
  }
  return {};
}
// The facts of a kind as a results file stores it (a number); defaults for one out of range.
constexpr TaskKindInfo task_kind_info(int kind) {
  return kind >= 0 && kind < kNumTaskKinds ? task_kind_info(static_cast<TaskKind>(kind))
                                           : TaskKindInfo{};
}
inline const char* to_string(TaskKind kind) {
  return task_kind_info(kind).name;
}
inline bool is_elementwise(TaskKind kind) {
  return task_kind_info(kind).elementwise;
}

// No all_reduce: plans decompose an all-reduce into a reduce_scatter and an all_gather, so that
// each half is a task the strategies can overlap and the backends implement once.
enum class CollectiveOp : uint8_t { none, all_gather, reduce_scatter, all_to_all };
const char* to_string(CollectiveOp op);

// How a buffer's contents come to be before an iteration.
enum class BufferInit : uint8_t {
  none,   // scratch: written by the plan before it is read
  input,  // integer-valued data from a global tensor (see InputRegion)
  zeros,  // constant zeros, never written
};

// Buffer rows [row, row + rows) hold rows [logical_row, logical_row + rows) of the tensor the
// buffer stands for.
struct RowRun {
  int64_t row = 0;
  int64_t logical_row = 0;
  int64_t rows = 0;
};

struct BufferSpec {
  std::string name;
  int64_t rows = 0;
  int64_t cols = 0;
  // Empty: row i holds the tensor's row i. Otherwise a permutation of the rows, in runs: a
  // buffer laid out so that a collective's blocks lie back to back (slicing's chunk-major X).
  // Inputs are declared in the buffer's own rows; checks compare in the tensor's order.
  std::vector<RowRun> layout;
};

// `logical` (a buffer's contents in the tensor's row order, `cols` per row) in the buffer's
// own row order.
std::vector<double> in_buffer_order(const BufferSpec& buffer, const std::vector<double>& logical);
// The tensor row that buffer row `row` holds.
int64_t logical_row(const BufferSpec& buffer, int64_t row);

// Rows [row, row + rows) of a buffer and, within them, columns [col, col + cols); cols 0 means
// every column from `col` on. Rows are always the buffer's full width apart (its leading
// dimension), so a column slice, such as one attention head, is a strided view.
struct View {
  int buffer = -1;
  int64_t row = 0;
  int64_t rows = 0;
  int64_t col = 0;
  int64_t cols = 0;
};

// `v` moved down by `rows` rows, every other field kept.
inline View shifted(View v, int64_t rows) {
  v.row += rows;
  return v;
}

// Rows [row, row + rows) of a buffer, whole rows.
struct RowSpan {
  int64_t row = 0;
  int64_t rows = 0;
};

// The rows a list of spans covers.
inline int64_t span_rows(const std::vector<RowSpan>& spans) {
  int64_t rows = 0;
  for (const RowSpan& span : spans) rows += span.rows;
  return rows;
}

// Whether the spans are of one size, `step` rows apart from one to the next (one strided copy
// or datatype moves them); a single span is, with step 0.
inline bool evenly_spaced(const std::vector<RowSpan>& spans, int64_t* step) {
  *step = spans.size() > 1 ? spans[1].row - spans[0].row : 0;
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].rows != spans[0].rows ||
        spans[i].row != spans[0].row + static_cast<int64_t>(i) * *step) {
      return false;
    }
  }
  return true;
}

// An all-to-all whose blocks differ by peer (all-to-all-v), per peer j: `send[j]` the spans of
// the source buffer that go to rank j, `recv[j]` the spans of the destination buffer that rank
// j's spans for this rank land in. Span i of send[j] on rank r is span i of recv[r] on rank j,
// of the same rows, so that both sides list the messages between them in one order (as NCCL
// matches a peer's sends and receives). A peer's list may be empty; entry [rank] pairs with
// itself and is copied locally. Every span has at least one row.
struct PeerSpans {
  std::vector<std::vector<RowSpan>> send, recv;  // [world][spans]
};

// A gather's rows (TaskKind::gather): destination row i takes weight[i] times source row
// src[i], counted from the source view's first row; src[i] = -1: no source (the row becomes
// zero, or is left as it is when the gather accumulates). weight empty: every weight 1. The
// mixture-of-experts layer's tokens in dispatch order, and its combine's routing weights.
struct RowMap {
  std::vector<int64_t> src;
  std::vector<double> weight;
};

// How far a batched GEMM's operand moves from one batch entry to the next.
struct Step {
  int64_t rows = 0;
  int64_t cols = 0;
};

// A region of a buffer filled from a global tensor: rows [row, row+rows) of the buffer hold
// the global tensor's rows [global_row, ...) and columns [global_col, global_col + cols).
struct InputRegion {
  int buffer = -1;
  int64_t row = 0;
  int64_t rows = 0;
  std::string tensor;  // "X", "W1", "H", "W2", "P"
  int64_t global_row = 0;
  int64_t global_col = 0;
  // > 0: the tensor is a signed selection matrix, one +-1 per column in a row below this.
  int64_t select_from = 0;
  // A weight (its timing data is spread as a trained layer's weights are, input_hash.h) rather
  // than an activation.
  bool weight = false;
};

// What an output buffer must hold after an iteration, for verification.
enum class CheckKind : uint8_t {
  gathered,          // the full global X (all-gather result)
  ag_out,            // Y_r = X * W1_r            [M, F/N]
  rs_out,            // Z_r = rows r of sum_j H_j * W2_j   [M/N, D]
  local_product,     // P_r = H_r * W2_r          [M, D]
  reduced_input,     // rows r of sum_j P_j       [M/N, D]
  ar_out,            // sum_j H_j * W2_j, every row   [M, D]
  allreduced_input,  // sum_j P_j, every row      [M, D]
  gathered_forward,  // the forward input X, gathered again in the backward pass
  grad_w2,           // mlp_bwd: dW2_r = Y_r^T * dZ          [F/N, D]
  grad_w1,           // mlp_bwd: dW1_r = X^T * dY_r          [D, F/N]
  attn_out,          // attn: O_r, attention of this rank's heads over all tokens   [M, D/N]
  // ulysses. Local rows: this rank's S/N tokens of every sequence, L = M/N of them; "peer
  // major": one block of L rows per rank j, holding what goes to (or came from) rank j.
  ulysses_out,      // Z_r = the local rows of O * WO                    [L, D]
  qkv_projected,    // compute_only: X_r * WQKV_j for every j, peer major    [N*L, 3D/N]
  input_attn_out,   // compute_only: attention of the input QKV_r (integer input)  [M, D/N]
  input_out,        // compute_only: the local rows of OA * WO (OA an integer input) [L, D]
  heads_scattered,  // comm_only: columns r of the input QKV, every row   [M, 3D/N]
  tokens_gathered,  // comm_only: the local rows of the input OA, peer major  [N*L, D/N]
  // moe (include/fob/moe.h; "dispatch order" and "expert order" are its layouts).
  moe_out,             // y: each local token's weighted sum of its experts' MLPs   [T, D]
  moe_gathered,        // compute_only: the local tokens in dispatch order          [sent, D]
  moe_expert_out,      // compute_only: each expert's MLP of the input XE rows      [received, D]
  moe_input_combined,  // compute_only: y as the weighted sum of the input YC rows  [T, D]
  moe_dispatched,      // comm_only: the input XS rows the peers sent, expert order [received, D]
  moe_combined,        // comm_only: the input YE rows the experts returned        [sent, D]
};
const char* to_string(CheckKind kind);

struct OutputCheck {
  int buffer = -1;
  CheckKind kind = CheckKind::ag_out;
};

struct Task {
  int id = -1;
  StreamId stream = StreamId::compute;
  TaskKind kind = TaskKind::gemm;
  std::vector<int> deps;  // ids of earlier tasks (either stream) this one waits for
  std::string label;

  // gemm: c[i] (=|+=) op(a[i]) * op(b[i]) for i in [0, batch); each operand's view moves by its
  // step per batch entry. add: c += a (element-wise, c.rows x cols). copy: c = a.
  // softmax: every row of c becomes softmax(scale * row), in place.
  // online_softmax: the m = batch * q rows of scores c (n keys each; row h*q + i is query i of
  // head h) fold into the running state a (query row i: column h the maximum of scale * score,
  // column batch + h the sum of exp) and become exp(scale * score - new maximum); query i's
  // k = head-width columns of head h in b (the unnormalised output O) scale by
  // exp(old maximum - new maximum). accumulate false: the first block, which sets the state
  // and leaves b alone (the GEMM after it writes O rather than adding to it).
  // softmax_finish: c's m rows of batch heads of k columns each divide by the state a's sums.
  // gather: c's m rows of n columns (=|+=) rows of a, as Plan::row_maps[row_map] says (RowMap).
  // glu: c[i, j] = max(a[i, j], 0) * a[i, n + j] for the m rows and n columns of c: a holds the
  // gate and then the up projection, 2n columns (ReGLU; SwiGLU's memory traffic, and exact on
  // integers).
  View a, b, c;
  int64_t m = 0, n = 0, k = 0;
  int batch = 1;
  Step a_step, b_step, c_step;
  bool accumulate = false;
  // op(a) = a^T: `a` holds k rows of m columns (a weight gradient from stored activations).
  bool transpose_a = false;
  // op(b) = b^T: `b` holds n rows of k columns (attention scores Q * K^T).
  bool transpose_b = false;
  double scale = 1;

  // send / recv / exchange: send `a` to send_peer, receive into `c` from recv_peer.
  int send_peer = -1;
  int recv_peer = -1;
  int tag = 0;

  // collective over all ranks. Rank j's block lies at src.row + j*src_stride_rows (reduce
  // scatter input) or dst.row + j*dst_stride_rows (all-gather output); src.rows rows each.
  // all_to_all: the block at a.row + j*src_stride_rows goes to rank j, and rank j's block for
  // this rank lands at c.row + j*dst_stride_rows (this rank's own block is copied). A block is
  // `batch` chunks of a.rows rows, chunk i a_step.rows further in `a` and c_step.rows in `c`
  // (one per sequence of a batch-major buffer), sent as one message.
  CollectiveOp op = CollectiveOp::none;
  int64_t src_stride_rows = 0;
  int64_t dst_stride_rows = 0;
  // all_to_all with uneven blocks: the index of its PeerSpans in Plan::peer_spans, which then
  // replace the strides, batch and steps (a and c name the buffers); -1 for the even form.
  int spans = -1;

  // gather: the index of its RowMap in Plan::row_maps.
  int row_map = -1;

  int64_t bytes = 0;  // bytes this rank sends
  double flops = 0;   // floating-point operations this rank performs

  bool is_transfer() const { return task_kind_info(kind).transfer; }
  // The point-to-point halves it has: an exchange with peer -1 on one side lacks that half.
  bool sends() const { return task_kind_info(kind).send_half && send_peer >= 0; }
  bool receives() const { return task_kind_info(kind).recv_half && recv_peer >= 0; }
};

// The steps of the ring algorithm a collective (an all-gather or a reduce-scatter) runs on
// `world` ranks.
inline int ring_steps(int world) {
  return world - 1;
}

struct Strategy;  // strategy.h: the table entry that built a plan

// A strategy as a case names it: its table entry and parameter, and the text as written.
struct StrategySpec {
  const Strategy* strategy = nullptr;
  int param = 0;
  std::string text;  // as written by the user, "slicing:4"
};

struct Plan {
  Workload workload = default_workload();
  StrategySpec strategy;  // the strategy that built the plan
  Shape shape;
  DType dtype = DType::fp32;
  int world = 1;
  int rank = 0;
  // > 0: every input tensor repeats every `input_period` rows and columns, a period that divides
  // every shard, so all ranks hold equal shards and one process can stand in for all of them
  // (CaseSpec::loopback). 0: the inputs do not repeat.
  int64_t input_period = 0;
  std::vector<BufferSpec> buffers;
  std::vector<InputRegion> inputs;
  std::vector<OutputCheck> checks;
  std::vector<Task> tasks;
  std::vector<PeerSpans> peer_spans;  // the uneven all-to-alls' blocks (Task::spans)
  std::vector<RowMap> row_maps;       // the gathers' rows (Task::row_map)

  int buffer_id(const std::string& name) const;  // -1 when absent
  int64_t buffer_bytes() const;                  // all buffers, at this plan's dtype
};

// The elements an element-wise task reads and writes, which its time is priced by: add reads
// two operands and writes one, copy and softmax read one and write one, online_softmax rewrites
// its scores and (after the first block) the output rows it rescales, softmax_finish its rows.
// gather reads its m source rows (not the whole source view) and two numbers of the map per row
// and writes m rows, reading them too when it accumulates; glu reads 2n and writes n per row.
double memory_elements(const Task& t);

// A view's column count, resolving cols 0 to "the rest of the row".
int64_t view_cols(const Plan& plan, const View& v);
// Offset of a view's first element from its buffer's start, in elements, after `steps` batch
// steps.
int64_t view_offset(const Plan& plan, const View& v, const Step& step = {}, int steps = 0);

// Readable listing for --dry-run.
void print_plan(std::ostream& out, const Plan& plan);

}  // namespace fob
