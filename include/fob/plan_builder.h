// Builds a Plan while tracking which rows of which buffer every task reads and writes, so that
// cross-stream dependencies follow from the data (read-after-write, write-after-read,
// write-after-write) instead of being written out by hand in every strategy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "fob/plan.h"

namespace fob {

// One GEMM task, possibly batched: c[i] (=|+=) op(a[i]) * op(b[i]).
struct GemmArgs {
  View a, b, c;
  bool accumulate = false;
  bool transpose_a = false;
  bool transpose_b = false;
  int batch = 1;
  Step a_step, b_step, c_step;
};

class PlanBuilder {
 public:
  // Buffers the plan already has are tracked as if declared here.
  explicit PlanBuilder(Plan& plan);

  int world() const { return plan_.world; }
  // Tasks so far: the next task's id.
  int task_count() const { return static_cast<int>(plan_.tasks.size()); }
  int rank() const { return plan_.rank; }
  // Ring and pair neighbours, mod world.
  int peer(int offset) const {
    return ((plan_.rank + offset) % plan_.world + plan_.world) % plan_.world;
  }

  // Returns the id of the named buffer, creating it if absent (a second call must agree on cols).
  int buffer(const std::string& name, int64_t rows, int64_t cols,
             BufferInit init = BufferInit::none);
  int64_t cols(int buffer) const { return plan_.buffers.at(buffer).cols; }
  int64_t rows(int buffer) const { return plan_.buffers.at(buffer).rows; }
  int buffer_id(const std::string& name) const { return plan_.buffer_id(name); }  // -1: none
  void input(const InputRegion& region);
  void check(int buffer, CheckKind kind);
  // Lays `buffer` out in another row order (BufferSpec::layout): `runs` permute its rows. Its
  // input regions, declared in the tensor's rows, move with them. Only before any task uses it.
  void relayout(int buffer, std::vector<RowRun> runs);

  int gemm(const GemmArgs& args, std::string label);
  // c[i] (=|+=) a[i] * b, i in [0, batch): a and c advance by their strides (in rows).
  int gemm(const View& a, const View& b, const View& c, bool accumulate, std::string label,
           int batch = 1, int64_t a_stride_rows = 0, int64_t c_stride_rows = 0);
  // c = a^T * b, where `a` is the k rows of a buffer m columns wide.
  int gemm_transposed_a(const View& a, const View& b, const View& c, std::string label);
  // Every row of `rows` becomes softmax(scale * row), in place.
  int softmax(const View& rows, double scale, std::string label);
  // The streamed attention's steps (plan.h, TaskKind::online_softmax): `scores` holds `heads`
  // blocks of query rows, one per head; `state` and `out` the same query rows of the running
  // maximum and sum (2 * heads columns) and of the output (heads * head_width columns). `first`:
  // the queries' first block of keys.
  int online_softmax(const View& scores, const View& state, const View& out, int heads,
                     int64_t head_width, double scale, bool first, std::string label);
  // out's rows (heads * head_width columns) divide by state's sums.
  int softmax_finish(const View& out, const View& state, int heads, int64_t head_width,
                     std::string label);
  // Row i of dst (=|+=) map.weight[i] * row map.src[i] of src, over whole rows of equal width
  // (RowMap: -1 no source; src rows counted from the view's first). The whole of src counts as
  // read.
  int gather(View dst, View src, RowMap map, bool accumulate, std::string label);
  // dst[i, j] = max(src[i, j], 0) * src[i, F + j], F = dst's width: src holds the gate and the
  // up projection side by side, as one GEMM writes them.
  int glu(View dst, View src, std::string label);
  int add(const View& dst, const View& src, std::string label);  // dst += src
  int copy(const View& dst, const View& src, std::string label);
  int exchange(const View& send, int send_peer, const View& recv, int recv_peer, int tag,
               std::string label);
  int send(const View& src, int peer, int tag, std::string label);
  int recv(const View& dst, int peer, int tag, std::string label);
  // All-gather: every rank's block (rows `block_rows`) lands at dst_row + j * dst_stride in
  // `buffer`, in place; this rank's own block is already there.
  int all_gather(int buffer, int64_t dst_row, int64_t block_rows, int64_t dst_stride,
                 std::string label);
  // Reduce-scatter: rank j's block of `src` (at src_row + j * src_stride) is summed over ranks
  // into this rank's `dst` view.
  int reduce_scatter(int src, int64_t src_row, int64_t src_stride, const View& dst,
                     std::string label);

  // All-to-all: the block at src_row + j * src_stride of `src` goes to rank j, and rank j's
  // block for this rank lands at dst_row + j * dst_stride of `dst` (this rank's own block is
  // copied, as NCCL's all-to-all sends it to itself). A block is `batch` chunks of `rows` rows,
  // chunk i at + i * src_step (dst_step): one collective however the rows are laid out.
  struct AllToAll {
    int src = -1;
    int64_t src_row = 0, src_stride = 0, src_step = 0;
    int dst = -1;
    int64_t dst_row = 0, dst_stride = 0, dst_step = 0;
    int64_t rows = 0;
    int batch = 1;
  };
  int all_to_all(const AllToAll& args, std::string label);
  // All-to-all with uneven blocks (all-to-all-v): `spans.send[j]` of `src` go to rank j and
  // rank j's spans for this rank land in `spans.recv[j]` of `dst` (PeerSpans). Every rank must
  // list the same spans for each pair (the n-th span r sends j is j's n-th from r, of its rows).
  int all_to_all_v(int src, int dst, PeerSpans spans, std::string label);

  // An extra ordering edge that the data does not imply (e.g. decompose's lock-step).
  void depend(int task, int on);

  // Room for `count` more tasks, from a strategy that knows how many it is about to add: the
  // plan's task list is then sized once instead of doubling its way there, moving every task
  // each time (in a large plan, as costly as all the hazard tracking).
  void reserve_tasks(int64_t count);

 private:
  struct Region {
    int buffer;
    int64_t begin;
    int64_t end;
  };
  struct Access {
    std::vector<Region> reads;
    std::vector<Region> writes;
  };
  // The Access every task lists its rows in, emptied: reused from task to task, its vectors
  // stop allocating once grown. One is enough, as no task is listed while another one is.
  Access& fresh_access();
  // add (dst += src) or copy (dst = src) over whole rows.
  int elementwise(TaskKind kind, const View& dst, const View& src, std::string label);
  int add_task(Task&& task, const Access& access);
  int64_t view_cols(const View& v) const { return fob::view_cols(plan_, v); }
  // Element-wise tasks and transfers move whole rows.
  void require_full_rows(const View& v, const std::string& label) const;
  // Every batch entry of a GEMM operand lies inside its buffer.
  void require_inside(const View& v, const Step& step, int batch, const std::string& label) const;
  // A point-to-point task; a side with peer -1 is absent.
  int transfer(TaskKind kind, const View& send, int send_peer, const View& recv, int recv_peer,
               int tag, std::string label);
  int64_t elem_bytes() const { return dtype_bytes(plan_.dtype); }

  Plan& plan_;
  std::unordered_map<std::string, int> buffer_ids_;  // name -> id, for every buffer
  Access access_;
  // Which task last touched each row of a buffer, kept as runs of rows sorted by their first
  // row: tasks touch long row ranges at once, so the runs stay few (a few per task), and both
  // memory and time follow the tasks, never the rows, which may be billions.
  class RowOwners {
   public:
    explicit RowOwners(int64_t rows) : rows_(rows) {}
    int latest(int64_t begin, int64_t end) const;  // -1 when no task touched [begin, end)
    void assign(int64_t begin, int64_t end, int task);
    bool untouched() const { return runs_.empty(); }

   private:
    struct Run {
      int64_t start;  // the run's first row; it ends where the next run starts, or at rows_
      int owner;      // its task, -1: none yet
    };
    // The run holding `row` (runs_ not empty).
    std::vector<Run>::const_iterator run_at(int64_t row) const;

    int64_t rows_;
    // Empty until the first assign (most buffers are never touched on most streams); then the
    // first run starts at row 0.
    std::vector<Run> runs_;
  };
  // Per buffer, the latest task of each stream that read or wrote each row, so that a new
  // task's latest conflict on the other stream is found without scanning earlier tasks.
  struct RowHistory {
    explicit RowHistory(int64_t rows)
        : last_read{RowOwners(rows), RowOwners(rows)},
          last_write{RowOwners(rows), RowOwners(rows)} {}
    RowOwners last_read[kNumStreams];
    RowOwners last_write[kNumStreams];
  };
  std::vector<RowHistory> history_;
};

}  // namespace fob
