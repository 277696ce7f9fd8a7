#include "fob/plan.h"

#include <algorithm>

#include "fob/workload.h"

#include <iomanip>
#include <iterator>
#include <ostream>

namespace fob {

const char* to_string(StreamId stream) {
  return stream == StreamId::compute ? "compute" : "comm";
}

double memory_elements(const Task& t) {
  const double mn = static_cast<double>(t.m) * static_cast<double>(t.n);
  switch (t.kind) {
    case TaskKind::add:
      return 3 * mn;
    case TaskKind::online_softmax:
      return 2 * mn + (t.accumulate ? 2 * static_cast<double>(t.m) * static_cast<double>(t.k) : 0);
    case TaskKind::gather:
      // The map's source index and weight count as an element each.
      return (t.accumulate ? 3 : 2) * mn + 2 * static_cast<double>(t.m);
    case TaskKind::glu:
      return 3 * mn;
    case TaskKind::copy:
    case TaskKind::softmax:
    case TaskKind::softmax_finish:
    case TaskKind::gemm:
    case TaskKind::send:
    case TaskKind::recv:
    case TaskKind::exchange:
    case TaskKind::collective:
      break;
  }
  return 2 * mn;
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::none:
      return "none";
    case CollectiveOp::all_gather:
      return "all_gather";
    case CollectiveOp::reduce_scatter:
      return "reduce_scatter";
    case CollectiveOp::all_to_all:
      return "all_to_all";
  }
  return "?";
}

const char* to_string(CheckKind kind) {
  // In CheckKind's order.
  static constexpr const char* kNames[] = {"gathered X",
                                           "X*W1",
                                           "reduce-scatter of H*W2",
                                           "H*W2",
                                           "reduce-scatter of P",
                                           "all-reduce of H*W2",
                                           "all-reduce of P",
                                           "gathered forward X",
                                           "Y^T * dZ",
                                           "X^T * dY",
                                           "attention O",
                                           "local rows of O*WO",
                                           "X_r*WQKV",
                                           "attention of input QKV",
                                           "local rows of OA*WO",
                                           "all-to-all of QKV",
                                           "all-to-all of OA",
                                           "weighted sum of the experts' MLPs",
                                           "tokens in dispatch order",
                                           "experts' MLPs of XE",
                                           "weighted sum of YC",
                                           "dispatch all-to-all of XS",
                                           "combine all-to-all of YE"};
  static_assert(std::size(kNames) == static_cast<size_t>(CheckKind::moe_combined) + 1);
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "?";
}

int Plan::buffer_id(const std::string& name) const {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int64_t Plan::buffer_bytes() const {
  int64_t total = 0;
  for (const BufferSpec& b : buffers) total += b.rows * b.cols * dtype_bytes(dtype);
  return total;
}

std::vector<double> in_buffer_order(const BufferSpec& buffer, const std::vector<double>& logical) {
  if (buffer.layout.empty()) return logical;
  std::vector<double> out(logical.size());
  const auto cols = static_cast<size_t>(buffer.cols);
  for (const RowRun& run : buffer.layout) {
    std::copy_n(logical.begin() + static_cast<std::ptrdiff_t>(run.logical_row * buffer.cols),
                static_cast<size_t>(run.rows) * cols,
                out.begin() + static_cast<std::ptrdiff_t>(run.row * buffer.cols));
  }
  return out;
}

int64_t logical_row(const BufferSpec& buffer, int64_t row) {
  for (const RowRun& run : buffer.layout) {
    if (row >= run.row && row < run.row + run.rows) return run.logical_row + (row - run.row);
  }
  return row;
}

int64_t view_cols(const Plan& plan, const View& v) {
  return v.cols > 0 ? v.cols : plan.buffers.at(v.buffer).cols - v.col;
}

int64_t view_offset(const Plan& plan, const View& v, const Step& step, int steps) {
  const int64_t ld = plan.buffers.at(v.buffer).cols;
  return (v.row + steps * step.rows) * ld + v.col + steps * step.cols;
}

namespace {

std::string view_text(const Plan& plan, const View& v) {
  if (v.buffer < 0) return "-";
  std::string text = plan.buffers[v.buffer].name + "[" + std::to_string(v.row) + ":" +
                     std::to_string(v.row + v.rows);
  if (v.col != 0 || view_cols(plan, v) != plan.buffers[v.buffer].cols) {
    text += ", " + std::to_string(v.col) + ":" + std::to_string(v.col + view_cols(plan, v));
  }
  return text + "]";
}

// An uneven all-to-all's rows to and from each rank, in rank order: "out 12/0/7 in 5/9/0".
void print_peer_rows(std::ostream& out, const Plan& plan, const Task& t) {
  const PeerSpans& spans = plan.peer_spans.at(static_cast<size_t>(t.spans));
  auto rows = [&out](const std::vector<std::vector<RowSpan>>& lists) {
    for (size_t j = 0; j < lists.size(); ++j) out << (j == 0 ? "" : "/") << span_rows(lists[j]);
  };
  out << "  " << plan.buffers.at(static_cast<size_t>(t.a.buffer)).name << " -> "
      << plan.buffers.at(static_cast<size_t>(t.c.buffer)).name << ", rows per rank: out ";
  rows(spans.send);
  out << " in ";
  rows(spans.recv);
}

// "X[0:12] -> Xs[0:20] (+=, weighted)": the source view, the rows written and how.
void print_gather(std::ostream& out, const Plan& plan, const Task& t) {
  const RowMap& map = plan.row_maps.at(static_cast<size_t>(t.row_map));
  out << "  " << view_text(plan, t.a) << " -> " << view_text(plan, t.c) << " ("
      << (t.accumulate ? "+=" : "=") << (map.weight.empty() ? "" : ", weighted") << ")";
}

// What a task computes or moves, after its label.
void print_task_operands(std::ostream& out, const Plan& plan, const Task& t) {
  if (t.kind == TaskKind::gemm) {
    out << "  " << view_text(plan, t.c) << (t.accumulate ? " += " : " = ")
        << (t.transpose_a ? "T(" : "") << view_text(plan, t.a) << (t.transpose_a ? ")" : "")
        << " * " << (t.transpose_b ? "T(" : "") << view_text(plan, t.b)
        << (t.transpose_b ? ")" : "");
    if (t.batch > 1) out << " x" << t.batch;
  }
  if (t.kind == TaskKind::softmax) {
    out << "  " << view_text(plan, t.c) << " = softmax(" << t.scale << " * " << view_text(plan, t.c)
        << ")";
  }
  if (t.kind == TaskKind::online_softmax) {
    out << "  " << view_text(plan, t.c) << " = exp(" << t.scale << " * " << view_text(plan, t.c)
        << " - max), state " << view_text(plan, t.a)
        << (t.accumulate ? ", rescales " + view_text(plan, t.b) : std::string(", first block"));
  }
  if (t.kind == TaskKind::softmax_finish) {
    out << "  " << view_text(plan, t.c) << " /= sums of " << view_text(plan, t.a);
  }
  if (t.kind == TaskKind::exchange || t.kind == TaskKind::send) {
    out << "  send " << view_text(plan, t.a) << " -> " << t.send_peer;
  }
  if (t.kind == TaskKind::exchange || t.kind == TaskKind::recv) {
    out << "  recv " << view_text(plan, t.c) << " <- " << t.recv_peer;
  }
  if (t.kind == TaskKind::collective && t.spans >= 0) print_peer_rows(out, plan, t);
  if (t.kind == TaskKind::gather) print_gather(out, plan, t);
  if (t.kind == TaskKind::glu) {
    out << "  " << view_text(plan, t.c) << " = glu(" << view_text(plan, t.a) << ")";
  }
}

}  // namespace

void print_plan(std::ostream& out, const Plan& plan) {
  out << "rank " << plan.rank << "/" << plan.world << "  " << to_string(plan.workload) << "  "
      << plan.strategy.text << "  M=" << plan.shape.tokens() << " D=" << plan.shape.hidden
      << (plan.workload->has_heads ? " heads=" + std::to_string(plan.shape.head_count())
                                   : " F=" + std::to_string(plan.shape.ffn))
      << " " << to_string(plan.dtype);
  if (plan.input_period > 0) out << "  loopback: inputs repeat every " << plan.input_period;
  out << "\n";
  out << "  buffers:";
  for (const BufferSpec& b : plan.buffers)
    out << " " << b.name << "[" << b.rows << "x" << b.cols << "]";
  out << "  (" << plan.buffer_bytes() << " bytes)\n";
  for (const Task& t : plan.tasks) {
    out << "  " << std::setw(3) << t.id << " " << std::left << std::setw(8) << to_string(t.stream)
        << std::setw(11) << to_string(t.kind) << std::right << t.label;
    print_task_operands(out, plan, t);
    if (t.bytes > 0) out << "  " << t.bytes << " B";
    if (t.flops > 0) out << "  " << t.flops << " flop";
    if (!t.deps.empty()) {
      out << "  after";
      for (int d : t.deps) out << " " << d;
    }
    out << "\n";
  }
}

}  // namespace fob
