#include "fob/plan_builder.h"

#include <algorithm>
#include <stdexcept>

namespace fob {

int PlanBuilder::buffer(const std::string& name, int64_t rows, int64_t cols, BufferInit init) {
  int id = plan_.buffer_id(name);
  if (id >= 0) {
    if (plan_.buffers[id].cols != cols || plan_.buffers[id].rows != rows) {
      throw std::logic_error("buffer " + name + " redeclared with another shape");
    }
    return id;
  }
  plan_.buffers.push_back(BufferSpec{name, rows, cols});
  id = static_cast<int>(plan_.buffers.size()) - 1;
  if (init == BufferInit::zeros) {
    plan_.inputs.push_back(InputRegion{id, 0, rows, "zeros", 0, 0});
  }
  return id;
}

void PlanBuilder::input(const InputRegion& region) {
  plan_.inputs.push_back(region);
}

void PlanBuilder::check(int buffer, CheckKind kind) {
  plan_.checks.push_back({buffer, kind});
}

int PlanBuilder::gemm(const View& a, const View& b, const View& c, bool accumulate,
                      const std::string& label, int batch, int64_t a_stride_rows,
                      int64_t c_stride_rows) {
  Task t;
  t.stream = StreamId::compute;
  t.kind = TaskKind::gemm;
  t.label = label;
  t.a = a;
  t.b = b;
  t.c = c;
  t.m = a.rows;
  t.k = cols(a.buffer);
  t.n = cols(c.buffer);
  if (b.rows != t.k || cols(b.buffer) != t.n || c.rows != t.m) {
    throw std::logic_error("gemm " + label + ": operand shapes disagree");
  }
  t.batch = batch;
  t.a_stride_rows = a_stride_rows;
  t.c_stride_rows = c_stride_rows;
  t.accumulate = accumulate;
  t.flops =
      2.0 * static_cast<double>(t.m) * static_cast<double>(t.n) * static_cast<double>(t.k) * batch;
  Access access;
  access.reads.push_back({b.buffer, b.row, b.row + b.rows});
  for (int i = 0; i < batch; ++i) {
    int64_t ar = a.row + i * a_stride_rows;
    int64_t cr = c.row + i * c_stride_rows;
    access.reads.push_back({a.buffer, ar, ar + a.rows});
    access.writes.push_back({c.buffer, cr, cr + c.rows});
    if (accumulate) access.reads.push_back({c.buffer, cr, cr + c.rows});
  }
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::gemm_transposed_a(const View& a, const View& b, const View& c,
                                   const std::string& label) {
  Task t;
  t.stream = StreamId::compute;
  t.kind = TaskKind::gemm;
  t.label = label;
  t.a = a;
  t.b = b;
  t.c = c;
  t.transpose_a = true;
  t.m = cols(a.buffer);
  t.k = a.rows;
  t.n = cols(c.buffer);
  if (b.rows != t.k || cols(b.buffer) != t.n || c.rows != t.m) {
    throw std::logic_error("gemm " + label + ": operand shapes disagree");
  }
  t.flops = 2.0 * static_cast<double>(t.m) * static_cast<double>(t.n) * static_cast<double>(t.k);
  Access access;
  access.reads = {{a.buffer, a.row, a.row + a.rows}, {b.buffer, b.row, b.row + b.rows}};
  access.writes = {{c.buffer, c.row, c.row + c.rows}};
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::add(const View& dst, const View& src, const std::string& label) {
  Task t;
  t.kind = TaskKind::add;
  t.label = label;
  t.a = src;
  t.c = dst;
  t.m = dst.rows;
  t.n = cols(dst.buffer);
  t.flops = static_cast<double>(t.m) * static_cast<double>(t.n);
  Access access;
  access.reads = {{src.buffer, src.row, src.row + src.rows},
                  {dst.buffer, dst.row, dst.row + dst.rows}};
  access.writes = {{dst.buffer, dst.row, dst.row + dst.rows}};
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::copy(const View& dst, const View& src, const std::string& label) {
  Task t;
  t.kind = TaskKind::copy;
  t.label = label;
  t.a = src;
  t.c = dst;
  t.m = dst.rows;
  t.n = cols(dst.buffer);
  Access access;
  access.reads = {{src.buffer, src.row, src.row + src.rows}};
  access.writes = {{dst.buffer, dst.row, dst.row + dst.rows}};
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::transfer(TaskKind kind, const View& send, int send_peer, const View& recv,
                          int recv_peer, int tag, const std::string& label) {
  Task t;
  t.stream = StreamId::comm;
  t.kind = kind;
  t.label = label;
  t.a = send;
  t.c = recv;
  t.send_peer = send_peer;
  t.recv_peer = recv_peer;
  t.tag = tag;
  Access access;
  if (send_peer >= 0) {
    t.bytes = send.rows * cols(send.buffer) * elem_bytes();
    access.reads = {{send.buffer, send.row, send.row + send.rows}};
  }
  if (recv_peer >= 0) access.writes = {{recv.buffer, recv.row, recv.row + recv.rows}};
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::exchange(const View& send, int send_peer, const View& recv, int recv_peer, int tag,
                          const std::string& label) {
  return transfer(TaskKind::exchange, send, send_peer, recv, recv_peer, tag, label);
}

int PlanBuilder::send(const View& src, int peer, int tag, const std::string& label) {
  return transfer(TaskKind::send, src, peer, View{}, -1, tag, label);
}

int PlanBuilder::recv(const View& dst, int peer, int tag, const std::string& label) {
  return transfer(TaskKind::recv, View{}, -1, dst, peer, tag, label);
}

int PlanBuilder::all_gather(int buffer, int64_t dst_row, int64_t block_rows, int64_t dst_stride,
                            const std::string& label) {
  Task t;
  t.stream = StreamId::comm;
  t.kind = TaskKind::collective;
  t.op = CollectiveOp::all_gather;
  t.label = label;
  t.a = View{buffer, dst_row + rank() * dst_stride, block_rows};
  t.c = View{buffer, dst_row, block_rows};
  t.dst_stride_rows = dst_stride;
  // A ring all-gather sends N-1 blocks from every rank.
  t.bytes = (world() - 1) * block_rows * cols(buffer) * elem_bytes();
  Access access;
  for (int j = 0; j < world(); ++j) {
    int64_t r = dst_row + j * dst_stride;
    if (j == rank()) {
      access.reads.push_back({buffer, r, r + block_rows});
    } else {
      access.writes.push_back({buffer, r, r + block_rows});
    }
  }
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::reduce_scatter(int src, int64_t src_row, int64_t src_stride, const View& dst,
                                const std::string& label) {
  Task t;
  t.stream = StreamId::comm;
  t.kind = TaskKind::collective;
  t.op = CollectiveOp::reduce_scatter;
  t.label = label;
  t.a = View{src, src_row, dst.rows};
  t.c = dst;
  t.src_stride_rows = src_stride;
  t.bytes = (world() - 1) * dst.rows * cols(src) * elem_bytes();
  // The reduction's additions are part of the collective, as in NCCL.
  t.flops = static_cast<double>(world() - 1) * static_cast<double>(dst.rows * cols(src));
  Access access;
  for (int j = 0; j < world(); ++j) {
    int64_t r = src_row + j * src_stride;
    access.reads.push_back({src, r, r + dst.rows});
  }
  access.writes.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  return add_task(std::move(t), std::move(access));
}

void PlanBuilder::depend(int task, int on) {
  std::vector<int>& deps = plan_.tasks.at(task).deps;
  if (on >= task) throw std::logic_error("dependency must point to an earlier task");
  if (std::find(deps.begin(), deps.end(), on) == deps.end()) deps.push_back(on);
  std::sort(deps.begin(), deps.end());
}

namespace {

bool overlaps(int buffer, int64_t begin, int64_t end, int other_buffer, int64_t other_begin,
              int64_t other_end) {
  return buffer == other_buffer && begin < other_end && other_begin < end;
}

template <typename A, typename B>
bool any_overlap(const A& xs, const B& ys) {
  for (const auto& x : xs) {
    for (const auto& y : ys) {
      if (overlaps(x.buffer, x.begin, x.end, y.buffer, y.begin, y.end)) return true;
    }
  }
  return false;
}

}  // namespace

int PlanBuilder::add_task(Task task, Access access) {
  task.id = static_cast<int>(plan_.tasks.size());
  // Tasks on one stream run in order, so only the latest conflicting task on the other
  // stream needs to become an edge: it completes after every earlier one there.
  int latest = -1;
  for (int i = task.id - 1; i >= 0; --i) {
    if (plan_.tasks[i].stream == task.stream) continue;
    const Access& prior = accesses_[i];
    if (any_overlap(access.reads, prior.writes) || any_overlap(access.writes, prior.reads) ||
        any_overlap(access.writes, prior.writes)) {
      latest = i;
      break;
    }
  }
  if (latest >= 0) task.deps.push_back(latest);
  plan_.tasks.push_back(std::move(task));
  accesses_.push_back(std::move(access));
  return plan_.tasks.back().id;
}

}  // namespace fob
