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

int PlanBuilder::gemm(const GemmArgs& g, const std::string& label) {
  Task t;
  t.stream = StreamId::compute;
  t.kind = TaskKind::gemm;
  t.label = label;
  t.a = g.a;
  t.b = g.b;
  t.c = g.c;
  t.transpose_a = g.transpose_a;
  t.transpose_b = g.transpose_b;
  t.m = g.transpose_a ? view_cols(g.a) : g.a.rows;
  t.k = g.transpose_a ? g.a.rows : view_cols(g.a);
  t.n = view_cols(g.c);
  const int64_t b_rows = g.transpose_b ? t.n : t.k;
  const int64_t b_cols = g.transpose_b ? t.k : t.n;
  if (g.b.rows != b_rows || view_cols(g.b) != b_cols || g.c.rows != t.m || g.batch < 1) {
    throw std::logic_error("gemm " + label + ": operand shapes disagree");
  }
  for (const auto& [view, step] : {std::pair{g.a, g.a_step}, {g.b, g.b_step}, {g.c, g.c_step}}) {
    require_inside(view, step, g.batch, label);
  }
  t.batch = g.batch;
  t.a_step = g.a_step;
  t.b_step = g.b_step;
  t.c_step = g.c_step;
  t.accumulate = g.accumulate;
  t.flops = 2.0 * static_cast<double>(t.m) * static_cast<double>(t.n) * static_cast<double>(t.k) *
            g.batch;
  // Hazards are tracked by rows: a column slice conflicts with anything in its rows, which may
  // add an edge but never misses one.
  Access access;
  for (int i = 0; i < g.batch; ++i) {
    const int64_t ar = g.a.row + i * g.a_step.rows;
    const int64_t br = g.b.row + i * g.b_step.rows;
    const int64_t cr = g.c.row + i * g.c_step.rows;
    access.reads.push_back({g.a.buffer, ar, ar + g.a.rows});
    access.reads.push_back({g.b.buffer, br, br + g.b.rows});
    access.writes.push_back({g.c.buffer, cr, cr + g.c.rows});
    if (g.accumulate) access.reads.push_back({g.c.buffer, cr, cr + g.c.rows});
  }
  return add_task(std::move(t), std::move(access));
}

int PlanBuilder::gemm(const View& a, const View& b, const View& c, bool accumulate,
                      const std::string& label, int batch, int64_t a_stride_rows,
                      int64_t c_stride_rows) {
  GemmArgs g;
  g.a = a;
  g.b = b;
  g.c = c;
  g.accumulate = accumulate;
  g.batch = batch;
  g.a_step.rows = a_stride_rows;
  g.c_step.rows = c_stride_rows;
  return gemm(g, label);
}

int PlanBuilder::gemm_transposed_a(const View& a, const View& b, const View& c,
                                   const std::string& label) {
  GemmArgs g;
  g.a = a;
  g.b = b;
  g.c = c;
  g.transpose_a = true;
  return gemm(g, label);
}

int PlanBuilder::softmax(const View& rows, double scale, const std::string& label) {
  Task t;
  t.kind = TaskKind::softmax;
  t.label = label;
  t.c = rows;
  t.m = rows.rows;
  t.n = view_cols(rows);
  t.scale = scale;
  // Per element: scale, running max, exp, sum and the division.
  t.flops = 5.0 * static_cast<double>(t.m) * static_cast<double>(t.n);
  Access access;
  access.reads = {{rows.buffer, rows.row, rows.row + rows.rows}};
  access.writes = access.reads;
  return add_task(std::move(t), std::move(access));
}

void PlanBuilder::require_inside(const View& v, const Step& step, int batch,
                                 const std::string& label) const {
  const BufferSpec& buf = plan_.buffers.at(v.buffer);
  for (int i : {0, batch - 1}) {
    const int64_t row = v.row + i * step.rows;
    const int64_t col = v.col + i * step.cols;
    if (row < 0 || row + v.rows > buf.rows || col < 0 || col + view_cols(v) > buf.cols) {
      // A view past its buffer's edge would wrap into other rows the hazards never see.
      throw std::logic_error("gemm " + label + ": a view leaves buffer " + buf.name);
    }
  }
}

void PlanBuilder::require_full_rows(const View& v, const std::string& label) const {
  if (v.buffer >= 0 && (v.col != 0 || view_cols(v) != cols(v.buffer))) {
    throw std::logic_error(label + ": element-wise tasks and transfers need whole rows");
  }
}

int PlanBuilder::add(const View& dst, const View& src, const std::string& label) {
  require_full_rows(dst, label);
  require_full_rows(src, label);
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
  require_full_rows(dst, label);
  require_full_rows(src, label);
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
  require_full_rows(send, label);
  require_full_rows(recv, label);
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

int PlanBuilder::RowOwners::latest(int64_t begin, int64_t end) const {
  int best = -1;
  auto it = runs_.upper_bound(begin);
  if (it != runs_.begin()) --it;
  for (; it != runs_.end() && it->first < end; ++it) {
    if (it->second.first > begin) best = std::max(best, it->second.second);
  }
  return best;
}

void PlanBuilder::RowOwners::assign(int64_t begin, int64_t end, int task) {
  if (begin >= end) return;
  // Most tasks touch the very rows an earlier one did (a weight, a block): just re-own them.
  if (auto same = runs_.find(begin); same != runs_.end() && same->second.first == end) {
    same->second.second = task;
    return;
  }
  // Cut the runs that straddle either edge, drop everything inside, insert the new run.
  auto split = [&](int64_t at) {
    auto it = runs_.upper_bound(at);
    if (it == runs_.begin()) return;
    --it;
    const auto [run_end, owner] = it->second;
    if (it->first < at && at < run_end) {
      it->second.first = at;
      runs_.emplace(at, std::pair{run_end, owner});
    }
  };
  split(begin);
  split(end);
  runs_.erase(runs_.lower_bound(begin), runs_.lower_bound(end));
  runs_.emplace(begin, std::pair{end, task});
}

int PlanBuilder::add_task(Task task, Access access) {
  task.id = static_cast<int>(plan_.tasks.size());
  // Tasks on one stream run in order, so only the latest conflicting task on the other
  // stream needs to become an edge: it completes after every earlier one there.
  const int self = static_cast<int>(task.stream);
  const int other = 1 - self;
  auto history = [&](int buffer) -> RowHistory& {
    if (static_cast<size_t>(buffer) >= history_.size()) history_.resize(buffer + 1);
    return history_[static_cast<size_t>(buffer)];
  };
  int latest = -1;
  for (const Region& r : access.reads) {  // read after write
    latest = std::max(latest, history(r.buffer).last_write[other].latest(r.begin, r.end));
  }
  for (const Region& r : access.writes) {  // write after read, write after write
    RowHistory& h = history(r.buffer);
    latest = std::max({latest, h.last_read[other].latest(r.begin, r.end),
                       h.last_write[other].latest(r.begin, r.end)});
  }
  if (latest >= 0) task.deps.push_back(latest);
  for (const Region& r : access.reads) {
    history(r.buffer).last_read[self].assign(r.begin, r.end, task.id);
  }
  for (const Region& r : access.writes) {
    history(r.buffer).last_write[self].assign(r.begin, r.end, task.id);
  }
  plan_.tasks.push_back(std::move(task));
  return plan_.tasks.back().id;
}

}  // namespace fob
