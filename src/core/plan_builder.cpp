#include "fob/plan_builder.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fob {

PlanBuilder::PlanBuilder(Plan& plan) : plan_(plan) {
  for (size_t id = 0; id < plan_.buffers.size(); ++id) {
    buffer_ids_.try_emplace(plan_.buffers[id].name, static_cast<int>(id));
    history_.emplace_back(plan_.buffers[id].rows);
  }
}

int PlanBuilder::buffer(const std::string& name, int64_t rows, int64_t cols, BufferInit init) {
  // Strategies ask for their buffers by name again and again (flash: twice per ring step), so
  // names are looked up in an index rather than compared with every buffer's.
  if (auto found = buffer_ids_.find(name); found != buffer_ids_.end()) {
    const BufferSpec& buf = plan_.buffers[static_cast<size_t>(found->second)];
    if (buf.cols != cols || buf.rows != rows) {
      throw std::logic_error("buffer " + name + " redeclared with another shape");
    }
    return found->second;
  }
  plan_.buffers.push_back(BufferSpec{name, rows, cols, {}});
  const int id = static_cast<int>(plan_.buffers.size()) - 1;
  buffer_ids_.emplace(name, id);
  history_.emplace_back(rows);
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

namespace {

// Whether runs of [0, rows) sorted by `start` tile it exactly.
template <typename Start>
bool tiles(std::vector<RowRun> runs, int64_t rows, Start start) {
  std::sort(runs.begin(), runs.end(),
            [&](const RowRun& a, const RowRun& b) { return start(a) < start(b); });
  int64_t next = 0;
  for (const RowRun& run : runs) {
    if (run.rows <= 0 || start(run) != next) return false;
    next += run.rows;
  }
  return next == rows;
}

}  // namespace

void PlanBuilder::relayout(int buffer, std::vector<RowRun> runs) {
  BufferSpec& spec = plan_.buffers.at(static_cast<size_t>(buffer));
  const RowHistory& h = history_.at(static_cast<size_t>(buffer));
  for (int s = 0; s < kNumStreams; ++s) {
    if (!h.last_read[s].untouched() || !h.last_write[s].untouched() || !spec.layout.empty()) {
      throw std::logic_error("buffer " + spec.name + " relaid out after it was used");
    }
  }
  if (!tiles(runs, spec.rows, [](const RowRun& r) { return r.row; }) ||
      !tiles(runs, spec.rows, [](const RowRun& r) { return r.logical_row; })) {
    throw std::logic_error("buffer " + spec.name + ": the runs are not a permutation of its rows");
  }
  std::vector<InputRegion> moved;
  for (const InputRegion& region : plan_.inputs) {
    if (region.buffer != buffer) {
      moved.push_back(region);
      continue;
    }
    for (const RowRun& run : runs) {
      const int64_t begin = std::max(region.row, run.logical_row);
      const int64_t end = std::min(region.row + region.rows, run.logical_row + run.rows);
      if (begin >= end) continue;
      InputRegion piece = region;
      piece.row = run.row + (begin - run.logical_row);
      piece.rows = end - begin;
      piece.global_row = region.global_row + (begin - region.row);
      moved.push_back(piece);
    }
  }
  plan_.inputs = std::move(moved);
  spec.layout = std::move(runs);
}

int PlanBuilder::gemm(const GemmArgs& g, std::string label) {
  Task t;
  t.stream = StreamId::compute;
  t.kind = TaskKind::gemm;
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
  t.label = std::move(label);
  // Hazards are tracked by rows: a column slice conflicts with anything in its rows, which may
  // add an edge but never misses one. An operand that steps by columns only (one attention head
  // after another) has the same rows in every batch entry, so they are listed once.
  Access& access = fresh_access();
  for (int i = 0; i < g.batch; ++i) {
    const int64_t ar = g.a.row + i * g.a_step.rows;
    const int64_t br = g.b.row + i * g.b_step.rows;
    const int64_t cr = g.c.row + i * g.c_step.rows;
    const bool first = i == 0;
    if (first || g.a_step.rows != 0) access.reads.push_back({g.a.buffer, ar, ar + g.a.rows});
    if (first || g.b_step.rows != 0) access.reads.push_back({g.b.buffer, br, br + g.b.rows});
    if (first || g.c_step.rows != 0) {
      access.writes.push_back({g.c.buffer, cr, cr + g.c.rows});
      if (g.accumulate) access.reads.push_back({g.c.buffer, cr, cr + g.c.rows});
    }
  }
  return add_task(std::move(t), access);
}

int PlanBuilder::gemm(const View& a, const View& b, const View& c, bool accumulate,
                      std::string label, int batch, int64_t a_stride_rows, int64_t c_stride_rows) {
  GemmArgs g;
  g.a = a;
  g.b = b;
  g.c = c;
  g.accumulate = accumulate;
  g.batch = batch;
  g.a_step.rows = a_stride_rows;
  g.c_step.rows = c_stride_rows;
  return gemm(g, std::move(label));
}

int PlanBuilder::gemm_transposed_a(const View& a, const View& b, const View& c, std::string label) {
  GemmArgs g;
  g.a = a;
  g.b = b;
  g.c = c;
  g.transpose_a = true;
  return gemm(g, std::move(label));
}

namespace {

// A task of `kind` named `label`; the caller fills in the rest.
Task new_task(TaskKind kind, std::string label) {
  Task t;
  t.kind = kind;
  t.label = std::move(label);
  return t;
}

// Whether an online softmax's per-head state (a maximum and a sum for each of `heads` heads)
// goes with the rows of `out` it scales, `heads` heads of `head_width` columns.
bool state_fits(const Plan& plan, const View& state, const View& out, int heads,
                int64_t head_width) {
  return heads >= 1 && out.rows == state.rows && view_cols(plan, state) >= 2 * heads &&
         view_cols(plan, out) >= heads * head_width;
}

// A collective's task, on the comm stream like every transfer.
Task collective_task(CollectiveOp op, std::string label) {
  Task t = new_task(TaskKind::collective, std::move(label));
  t.stream = StreamId::comm;
  t.op = op;
  return t;
}

}  // namespace

int PlanBuilder::softmax(const View& rows, double scale, std::string label) {
  Task t = new_task(TaskKind::softmax, std::move(label));
  t.c = rows;
  t.m = rows.rows;
  t.n = view_cols(rows);
  t.scale = scale;
  // Per element: scale, running max, exp, sum and the division.
  t.flops = 5.0 * static_cast<double>(t.m) * static_cast<double>(t.n);
  Access& access = fresh_access();
  access.reads.push_back({rows.buffer, rows.row, rows.row + rows.rows});
  access.writes.push_back(access.reads.back());
  return add_task(std::move(t), access);
}

int PlanBuilder::online_softmax(const View& scores, const View& state, const View& out, int heads,
                                int64_t head_width, double scale, bool first, std::string label) {
  if (heads < 1 || scores.rows % heads != 0 || state.rows * heads != scores.rows ||
      !state_fits(plan_, state, out, heads, head_width)) {
    throw std::logic_error("online_softmax: views do not agree: " + label);
  }
  Task t = new_task(TaskKind::online_softmax, std::move(label));
  t.c = scores;
  t.a = state;
  t.b = out;
  t.m = scores.rows;
  t.n = view_cols(scores);
  t.k = head_width;
  t.batch = heads;
  t.scale = scale;
  t.accumulate = !first;
  // Per score: scale, maximum, exp and sum; per rescaled output element a product.
  t.flops = 4.0 * static_cast<double>(t.m) * static_cast<double>(t.n) +
            (first ? 0.0 : static_cast<double>(t.m) * static_cast<double>(t.k));
  Access& access = fresh_access();
  access.reads.push_back({scores.buffer, scores.row, scores.row + scores.rows});
  access.writes.push_back(access.reads.back());
  access.reads.push_back({state.buffer, state.row, state.row + state.rows});
  access.writes.push_back(access.reads.back());
  if (!first) {
    access.reads.push_back({out.buffer, out.row, out.row + out.rows});
    access.writes.push_back(access.reads.back());
  }
  return add_task(std::move(t), access);
}

int PlanBuilder::softmax_finish(const View& out, const View& state, int heads, int64_t head_width,
                                std::string label) {
  if (!state_fits(plan_, state, out, heads, head_width)) {
    throw std::logic_error("softmax_finish: views do not agree: " + label);
  }
  Task t = new_task(TaskKind::softmax_finish, std::move(label));
  t.c = out;
  t.a = state;
  t.m = out.rows;
  t.n = heads * head_width;
  t.k = head_width;
  t.batch = heads;
  t.flops = static_cast<double>(t.m) * static_cast<double>(t.n);
  Access& access = fresh_access();
  access.reads.push_back({state.buffer, state.row, state.row + state.rows});
  access.reads.push_back({out.buffer, out.row, out.row + out.rows});
  access.writes.push_back(access.reads.back());
  return add_task(std::move(t), access);
}

void PlanBuilder::require_inside(const View& v, const Step& step, int batch,
                                 const std::string& label) const {
  const BufferSpec& buf = plan_.buffers.at(v.buffer);
  const int64_t cols = view_cols(v);
  for (int i : {0, batch - 1}) {
    const int64_t row = v.row + i * step.rows;
    const int64_t col = v.col + i * step.cols;
    if (row < 0 || row + v.rows > buf.rows || col < 0 || col + cols > buf.cols) {
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

int PlanBuilder::add(const View& dst, const View& src, std::string label) {
  return elementwise(TaskKind::add, dst, src, std::move(label));
}

int PlanBuilder::copy(const View& dst, const View& src, std::string label) {
  return elementwise(TaskKind::copy, dst, src, std::move(label));
}

int PlanBuilder::elementwise(TaskKind kind, const View& dst, const View& src, std::string label) {
  require_full_rows(dst, label);
  require_full_rows(src, label);
  Task t = new_task(kind, std::move(label));
  t.a = src;
  t.c = dst;
  t.m = dst.rows;
  t.n = cols(dst.buffer);
  // An add reads its destination too and costs one operation per element; a copy only moves.
  const bool add = kind == TaskKind::add;
  if (add) t.flops = static_cast<double>(t.m) * static_cast<double>(t.n);
  Access& access = fresh_access();
  access.reads.push_back({src.buffer, src.row, src.row + src.rows});
  if (add) access.reads.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  access.writes.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  return add_task(std::move(t), access);
}

int PlanBuilder::transfer(TaskKind kind, const View& send, int send_peer, const View& recv,
                          int recv_peer, int tag, std::string label) {
  require_full_rows(send, label);
  require_full_rows(recv, label);
  Task t = new_task(kind, std::move(label));
  t.stream = StreamId::comm;
  t.a = send;
  t.c = recv;
  t.send_peer = send_peer;
  t.recv_peer = recv_peer;
  t.tag = tag;
  Access& access = fresh_access();
  if (send_peer >= 0) {
    t.bytes = send.rows * cols(send.buffer) * elem_bytes();
    access.reads.push_back({send.buffer, send.row, send.row + send.rows});
  }
  if (recv_peer >= 0) access.writes.push_back({recv.buffer, recv.row, recv.row + recv.rows});
  return add_task(std::move(t), access);
}

int PlanBuilder::exchange(const View& send, int send_peer, const View& recv, int recv_peer, int tag,
                          std::string label) {
  return transfer(TaskKind::exchange, send, send_peer, recv, recv_peer, tag, std::move(label));
}

int PlanBuilder::send(const View& src, int peer, int tag, std::string label) {
  return transfer(TaskKind::send, src, peer, View{}, -1, tag, std::move(label));
}

int PlanBuilder::recv(const View& dst, int peer, int tag, std::string label) {
  return transfer(TaskKind::recv, View{}, -1, dst, peer, tag, std::move(label));
}

int PlanBuilder::all_gather(int buffer, int64_t dst_row, int64_t block_rows, int64_t dst_stride,
                            std::string label) {
  Task t = collective_task(CollectiveOp::all_gather, std::move(label));
  t.a = View{buffer, dst_row + rank() * dst_stride, block_rows};
  t.c = View{buffer, dst_row, block_rows};
  t.dst_stride_rows = dst_stride;
  // A ring all-gather sends N-1 blocks from every rank.
  t.bytes = (world() - 1) * block_rows * cols(buffer) * elem_bytes();
  Access& access = fresh_access();
  for (int j = 0; j < world(); ++j) {
    int64_t r = dst_row + j * dst_stride;
    if (j == rank()) {
      access.reads.push_back({buffer, r, r + block_rows});
    } else {
      access.writes.push_back({buffer, r, r + block_rows});
    }
  }
  return add_task(std::move(t), access);
}

int PlanBuilder::reduce_scatter(int src, int64_t src_row, int64_t src_stride, const View& dst,
                                std::string label) {
  Task t = collective_task(CollectiveOp::reduce_scatter, std::move(label));
  t.a = View{src, src_row, dst.rows};
  t.c = dst;
  t.src_stride_rows = src_stride;
  t.bytes = (world() - 1) * dst.rows * cols(src) * elem_bytes();
  // The reduction's additions are part of the collective, as in NCCL.
  t.flops = static_cast<double>(world() - 1) * static_cast<double>(dst.rows * cols(src));
  Access& access = fresh_access();
  for (int j = 0; j < world(); ++j) {
    int64_t r = src_row + j * src_stride;
    access.reads.push_back({src, r, r + dst.rows});
  }
  access.writes.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  return add_task(std::move(t), access);
}

int PlanBuilder::all_to_all(const AllToAll& args, std::string label) {
  if (cols(args.src) != cols(args.dst))
    throw std::logic_error(label + ": all-to-all between widths");
  Task t = collective_task(CollectiveOp::all_to_all, std::move(label));
  t.a = View{args.src, args.src_row, args.rows};
  t.c = View{args.dst, args.dst_row, args.rows};
  t.src_stride_rows = args.src_stride;
  t.dst_stride_rows = args.dst_stride;
  t.batch = args.batch;
  t.a_step.rows = args.src_step;
  t.c_step.rows = args.dst_step;
  // Every rank sends one block to each of the N-1 others.
  t.bytes = (world() - 1) * args.batch * args.rows * cols(args.src) * elem_bytes();
  Access& access = fresh_access();
  for (int j = 0; j < world(); ++j) {
    for (int i = 0; i < args.batch; ++i) {
      const int64_t from = args.src_row + j * args.src_stride + i * args.src_step;
      const int64_t to = args.dst_row + j * args.dst_stride + i * args.dst_step;
      access.reads.push_back({args.src, from, from + args.rows});
      access.writes.push_back({args.dst, to, to + args.rows});
    }
  }
  return add_task(std::move(t), access);
}

int PlanBuilder::all_to_all_v(int src, int dst, PeerSpans spans, std::string label) {
  if (cols(src) != cols(dst)) throw std::logic_error(label + ": all-to-all between widths");
  const size_t world = static_cast<size_t>(this->world());
  if (spans.send.size() != world || spans.recv.size() != world) {
    throw std::logic_error(label + ": all-to-all-v needs one span list per rank");
  }
  const size_t own = static_cast<size_t>(rank());
  if (spans.send[own].size() != spans.recv[own].size()) {
    throw std::logic_error(label + ": this rank's own spans do not pair");
  }
  Task t = collective_task(CollectiveOp::all_to_all, std::move(label));
  t.a = View{src, 0, rows(src)};
  t.c = View{dst, 0, rows(dst)};
  Access& access = fresh_access();
  auto list = [&](int buffer, const RowSpan& span, std::vector<Region>& regions) {
    if (span.rows <= 0 || span.row < 0 || span.row + span.rows > rows(buffer)) {
      throw std::logic_error(t.label + ": span of rows " + std::to_string(span.row) + "+" +
                             std::to_string(span.rows) + " outside its buffer");
    }
    regions.push_back({buffer, span.row, span.row + span.rows});
  };
  for (size_t j = 0; j < world; ++j) {
    for (const RowSpan& span : spans.send[j]) {
      list(src, span, access.reads);
      if (j != own) t.bytes += span.rows * cols(src) * elem_bytes();
    }
    for (const RowSpan& span : spans.recv[j]) list(dst, span, access.writes);
  }
  for (size_t i = 0; i < spans.send[own].size(); ++i) {
    if (spans.send[own][i].rows != spans.recv[own][i].rows) {
      throw std::logic_error(t.label + ": this rank's own spans differ in rows");
    }
  }
  t.spans = static_cast<int>(plan_.peer_spans.size());
  plan_.peer_spans.push_back(std::move(spans));
  return add_task(std::move(t), access);
}

void PlanBuilder::depend(int task, int on) {
  std::vector<int>& deps = plan_.tasks.at(task).deps;
  if (on >= task) throw std::logic_error("dependency must point to an earlier task");
  if (std::find(deps.begin(), deps.end(), on) == deps.end()) deps.push_back(on);
  std::sort(deps.begin(), deps.end());
}

void PlanBuilder::reserve_tasks(int64_t count) {
  std::vector<Task>& tasks = plan_.tasks;
  const size_t wanted = tasks.size() + static_cast<size_t>(std::max<int64_t>(count, 0));
  // At least doubling still, so that many small reservations cannot make growth quadratic.
  if (wanted > tasks.capacity()) tasks.reserve(std::max(wanted, 2 * tasks.capacity()));
}

std::vector<PlanBuilder::RowOwners::Run>::const_iterator PlanBuilder::RowOwners::run_at(
    int64_t row) const {
  // The last run starting at or before `row`; the first run starts at 0, so there is one.
  auto after = std::upper_bound(runs_.begin(), runs_.end(), row,
                                [](int64_t r, const Run& run) { return r < run.start; });
  return after - 1;
}

int PlanBuilder::RowOwners::latest(int64_t begin, int64_t end) const {
  if (runs_.empty() || begin >= end) return -1;
  int best = -1;
  for (auto it = run_at(begin); it != runs_.end() && it->start < end; ++it) {
    best = std::max(best, it->owner);
  }
  return best;
}

void PlanBuilder::RowOwners::assign(int64_t begin, int64_t end, int task) {
  if (begin >= end) return;
  if (runs_.empty()) runs_.push_back({0, -1});
  // The rows from `end` on keep their owner: the run holding `end` is cut there.
  const bool cut_at_end = end < rows_;
  const int owner_at_end = cut_at_end ? run_at(end)->owner : -1;
  auto by_start = [](const Run& run, int64_t r) { return run.start < r; };
  auto first = std::lower_bound(runs_.begin(), runs_.end(), begin, by_start);
  auto last = std::lower_bound(first, runs_.end(), end, by_start);
  const bool has_end = last != runs_.end() && last->start == end;
  // The runs starting inside [begin, end) become one, owned by `task`, and one more starts at
  // `end` unless one does already: overwritten in place, with a single erase or insert for the
  // difference, so that the runs after them move once.
  Run fresh[2] = {{begin, task}, {end, owner_at_end}};
  const ptrdiff_t wanted = cut_at_end && !has_end ? 2 : 1;
  const ptrdiff_t present = last - first;
  const ptrdiff_t reused = std::min(wanted, present);
  std::copy(fresh, fresh + reused, first);
  if (present > wanted) {
    runs_.erase(first + reused, last);
  } else if (present < wanted) {
    runs_.insert(first + reused, fresh + reused, fresh + wanted);
  }
}

PlanBuilder::Access& PlanBuilder::fresh_access() {
  access_.reads.clear();
  access_.writes.clear();
  return access_;
}

int PlanBuilder::add_task(Task&& task, const Access& access) {
  task.id = static_cast<int>(plan_.tasks.size());
  for (const std::vector<Region>* regions : {&access.reads, &access.writes}) {
    for (const Region& r : *regions) {
      // The rows are tracked per buffer, so a range past its buffer's end has nowhere to go.
      const BufferSpec& buf = plan_.buffers.at(static_cast<size_t>(r.buffer));
      if (r.begin < 0 || r.end < r.begin || r.end > buf.rows) {
        throw std::logic_error(task.label + ": rows " + std::to_string(r.begin) + ":" +
                               std::to_string(r.end) + " leave buffer " + buf.name);
      }
    }
  }
  auto history = [&](const Region& r) -> RowHistory& {
    return history_[static_cast<size_t>(r.buffer)];
  };
  // Tasks on one stream run in order, so only the latest conflicting task on the other
  // stream needs to become an edge: it completes after every earlier one there.
  const int self = static_cast<int>(task.stream);
  const int other = 1 - self;
  int latest = -1;
  for (const Region& r : access.reads) {  // read after write
    latest = std::max(latest, history(r).last_write[other].latest(r.begin, r.end));
  }
  for (const Region& r : access.writes) {  // write after read, write after write
    const RowHistory& h = history(r);
    latest = std::max({latest, h.last_read[other].latest(r.begin, r.end),
                       h.last_write[other].latest(r.begin, r.end)});
  }
  if (latest >= 0) task.deps.push_back(latest);
  for (const Region& r : access.reads) {
    history(r).last_read[self].assign(r.begin, r.end, task.id);
  }
  for (const Region& r : access.writes) {
    history(r).last_write[self].assign(r.begin, r.end, task.id);
  }
  plan_.tasks.push_back(std::move(task));
  return plan_.tasks.back().id;
}

}  // namespace fob
