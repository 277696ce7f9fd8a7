#include "a2a_pieces.h"

#include <algorithm>
#include <utility>

namespace fob {
namespace {

// Calls fn(local, run) for each run of the range that stays inside one sequence.
template <typename Fn>
void for_each_run(const A2aProblem& p, int64_t begin, int64_t rows, Fn fn) {
  for (int64_t local = begin; local < begin + rows;) {
    const int64_t end = std::min(begin + rows, (local / p.tokens + 1) * p.tokens);
    fn(local, end - local);
    local = end;
  }
}

std::string run_label(const std::string& label, const A2aProblem& p, int64_t local, int64_t rows,
                      int64_t total) {
  if (rows == total) return label;
  return label + " (seq " + std::to_string(local / p.tokens) + ")";
}

// A range of whole sequences is one GEMM batched over them; any other range is one GEMM per
// sequence it touches. `a` or `c` (is_seq_major) lies sequence major, the other peer major.
void gemm_by_sequence(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows, GemmArgs g,
                      bool a_seq_major, const std::string& label) {
  const int r = b.rank();
  if (begin % p.tokens == 0 && rows % p.tokens == 0) {
    g.batch = static_cast<int>(rows / p.tokens);
    g.a.row = a_seq_major ? p.seq_row(r, begin) : begin;
    g.c.row = a_seq_major ? begin : p.seq_row(r, begin);
    g.a.rows = g.c.rows = p.tokens;
    g.a_step = {a_seq_major ? p.seq : p.tokens, 0};
    g.c_step = {a_seq_major ? p.tokens : p.seq, 0};
    b.gemm(g, label);
    return;
  }
  for_each_run(p, begin, rows, [&](int64_t local, int64_t run) {
    g.a.row = a_seq_major ? p.seq_row(r, local) : local;
    g.c.row = a_seq_major ? local : p.seq_row(r, local);
    g.a.rows = g.c.rows = run;
    b.gemm(g, run_label(label, p, local, run, rows));
  });
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> sequence_runs(const A2aProblem& p, int64_t begin,
                                                       int64_t rows) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for_each_run(p, begin, rows, [&](int64_t local, int64_t run) { runs.emplace_back(local, run); });
  return runs;
}

int project_qkv(PlanBuilder& b, const A2aProblem& p, int j, int64_t begin, int64_t rows,
                const std::string& label) {
  return b.gemm({p.x, begin, rows}, {p.wqkv, 0, p.hidden, j * p.qkv_width, p.qkv_width},
                {p.qkv_send, p.peer_row(j, begin), rows}, false, label);
}

int project_qkv_all(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                    const std::string& label) {
  GemmArgs g;
  g.a = {p.x, begin, rows};
  g.b = {p.wqkv, 0, p.hidden, 0, p.qkv_width};
  g.c = {p.qkv_send, p.peer_row(0, begin), rows};
  g.batch = b.world();
  g.b_step = {0, p.qkv_width};
  g.c_step = {p.local_rows(), 0};
  return b.gemm(g, label);
}

void project_qkv_own(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                     const std::string& label) {
  GemmArgs g;
  g.a = {p.x, 0, 0};
  g.b = {p.wqkv, 0, p.hidden, b.rank() * p.qkv_width, p.qkv_width};
  g.c = {p.qkv, 0, 0};
  gemm_by_sequence(b, p, begin, rows, g, false, label);
}

namespace {

// One side of an all-to-all: a buffer and how its rows lie. Peer major: rank j's block of L rows
// at j * L, its sequences T rows apart; sequence major: whole sequences S rows apart, rank j's
// tokens T rows into each.
struct Side {
  int buffer;
  bool seq_major;
  int64_t row(const A2aProblem& p, int j, int64_t local) const {
    return seq_major ? p.seq_row(j, local) : p.peer_row(j, local);
  }
  int64_t rank_stride(const A2aProblem& p) const { return seq_major ? p.tokens : p.local_rows(); }
  int64_t sequence_step(const A2aProblem& p) const { return seq_major ? p.seq : p.tokens; }
};

// #1 moves qkv_send (peer major) into qkv (sequence major); #2 moves o back into o_recv.
std::pair<Side, Side> sides(const A2aProblem& p, bool to_heads) {
  if (to_heads) return {{p.qkv_send, false}, {p.qkv, true}};
  return {{p.o, true}, {p.o_recv, false}};
}

// The range sent to `to` and received from `from`, one exchange per sequence it touches.
std::vector<int> exchange_range(PlanBuilder& b, const A2aProblem& p, bool to_heads, int to,
                                int from, int64_t begin, int64_t rows, int tag,
                                const std::string& label) {
  // Named, not bound: clang before 16 cannot capture structured bindings in a lambda.
  const std::pair<Side, Side> ends = sides(p, to_heads);
  const Side &src = ends.first, &dst = ends.second;
  std::vector<int> ids;
  for_each_run(p, begin, rows, [&](int64_t local, int64_t run) {
    ids.push_back(b.exchange({src.buffer, src.row(p, to, local), run}, to,
                             {dst.buffer, dst.row(p, from, local), run}, from, tag,
                             run_label(label, p, local, run, rows)));
  });
  return ids;
}

// The range as one all-to-all when it is whole sequences (a chunk per sequence), else one per
// sequence it touches; on one rank, copies.
void all_to_all_range(PlanBuilder& b, const A2aProblem& p, bool to_heads, int64_t begin,
                      int64_t rows, const std::string& label) {
  // Named, not bound: clang before 16 cannot capture structured bindings in a lambda.
  const std::pair<Side, Side> ends = sides(p, to_heads);
  const Side &src = ends.first, &dst = ends.second;
  auto emit = [&](int64_t local, int64_t run, int batch, const std::string& name) {
    if (b.world() == 1) {
      for (int i = 0; i < batch; ++i) {
        b.copy({dst.buffer, dst.row(p, 0, local) + i * dst.sequence_step(p), run},
               {src.buffer, src.row(p, 0, local) + i * src.sequence_step(p), run},
               batch > 1 ? name + " (seq " + std::to_string(local / p.tokens + i) + ")" : name);
      }
      return;
    }
    PlanBuilder::AllToAll args;
    args.src = src.buffer;
    args.src_row = src.row(p, 0, local);
    args.src_stride = src.rank_stride(p);
    args.src_step = src.sequence_step(p);
    args.dst = dst.buffer;
    args.dst_row = dst.row(p, 0, local);
    args.dst_stride = dst.rank_stride(p);
    args.dst_step = dst.sequence_step(p);
    args.rows = run;
    args.batch = batch;
    b.all_to_all(args, name);
  };
  if (begin % p.tokens == 0 && rows % p.tokens == 0) {
    emit(begin, p.tokens, static_cast<int>(rows / p.tokens), label);
    return;
  }
  for_each_run(p, begin, rows, [&](int64_t local, int64_t run) {
    emit(local, run, 1, run_label(label, p, local, run, rows));
  });
}

}  // namespace

std::vector<int> exchange_qkv(PlanBuilder& b, const A2aProblem& p, int to, int from, int64_t begin,
                              int64_t rows, int tag, const std::string& label) {
  return exchange_range(b, p, true, to, from, begin, rows, tag, label);
}

std::vector<int> exchange_o(PlanBuilder& b, const A2aProblem& p, int to, int from, int64_t begin,
                            int64_t rows, int tag, const std::string& label) {
  return exchange_range(b, p, false, to, from, begin, rows, tag, label);
}

void all_to_all_qkv(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                    const std::string& label) {
  all_to_all_range(b, p, true, begin, rows, label);
}

void all_to_all_o(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                  const std::string& label) {
  all_to_all_range(b, p, false, begin, rows, label);
}

int project_out(PlanBuilder& b, const A2aProblem& p, int j, int64_t begin, int64_t rows,
                bool accumulate, const std::string& label) {
  return b.gemm({p.o_recv, p.peer_row(j, begin), rows}, {p.wo, j * p.head_width, p.head_width},
                {p.z, begin, rows}, accumulate, label);
}

void project_out_own(PlanBuilder& b, const A2aProblem& p, int64_t begin, int64_t rows,
                     bool accumulate, const std::string& label) {
  GemmArgs g;
  g.a = {p.o, 0, 0};
  g.b = {p.wo, b.rank() * p.head_width, p.head_width};
  g.c = {p.z, 0, 0};
  g.accumulate = accumulate;
  gemm_by_sequence(b, p, begin, rows, g, true, label);
}

void produce_o_for(PlanBuilder& b, const A2aProblem& p, int j, int64_t begin, int64_t rows) {
  if (!p.produce_o) return;
  for_each_run(p, begin, rows,
               [&](int64_t local, int64_t run) { p.produce_o(b, p.seq_row(j, local), run); });
}

}  // namespace fob
