#include "fob/transfer_messages.h"

namespace fob {

namespace {

using Role = Message::Role;

// The ranks a collective reaches from `rank`, the next one up first and round the ring.
std::vector<int> peers_from(int rank, int world) {
  std::vector<int> peers;
  for (int step = 1; step < world; ++step) peers.push_back((rank + step) % world);
  return peers;
}

void all_gather(const Plan& plan, const Task& t, std::vector<Message>& out) {
  const int rank = plan.rank, world = plan.world;
  for (int j = 0; j < world; ++j) {
    if (j != rank) out.push_back({Role::receive, j, shifted(t.c, j * t.dst_stride_rows), {}});
  }
  out.push_back({Role::local, -1, shifted(t.c, rank * t.dst_stride_rows), t.a});
  for (int j : peers_from(rank, world)) out.push_back({Role::send, j, t.a, {}});
}

// Rank j's contribution to this rank's block arrives whole and is added; this rank's own
// contribution is the sum's first term. The partial sums are awaited in the order they come:
// every rank sends round from the next rank up, so the next rank down's arrives first, and each
// addition runs while the next partial sum is still on its way.
void reduce_scatter(const Plan& plan, const Task& t, std::vector<Message>& out) {
  const int rank = plan.rank, world = plan.world;
  for (int step = 1; step < world; ++step) {
    out.push_back({Role::reduce, (rank - step + world) % world, t.c, {}});
  }
  out.push_back({Role::local, -1, t.c, shifted(t.a, rank * t.src_stride_rows)});
  for (int j : peers_from(rank, world)) {
    out.push_back({Role::send, j, shifted(t.a, j * t.src_stride_rows), {}});
  }
}

void all_to_all(const Plan& plan, const Task& t, std::vector<Message>& out) {
  const int rank = plan.rank, world = plan.world;
  auto chunk_in = [&](const View& v, int64_t stride, const Step& step, int j, int i) {
    return shifted(v, j * stride + i * step.rows);
  };
  for (int j = 0; j < world; ++j) {
    if (j == rank) continue;
    for (int i = 0; i < t.batch; ++i) {
      out.push_back({Role::receive, j, chunk_in(t.c, t.dst_stride_rows, t.c_step, j, i), {}});
    }
  }
  for (int i = 0; i < t.batch; ++i) {
    out.push_back({Role::local, -1, chunk_in(t.c, t.dst_stride_rows, t.c_step, rank, i),
                   chunk_in(t.a, t.src_stride_rows, t.a_step, rank, i)});
  }
  for (int j : peers_from(rank, world)) {
    for (int i = 0; i < t.batch; ++i) {
      out.push_back({Role::send, j, chunk_in(t.a, t.src_stride_rows, t.a_step, j, i), {}});
    }
  }
}

}  // namespace

std::vector<Message> transfer_messages(const Plan& plan, const Task& t) {
  std::vector<Message> out;
  if (!t.is_transfer()) return out;
  if (t.kind != TaskKind::collective) {
    if (t.receives()) out.push_back({Role::receive, t.recv_peer, t.c, {}});
    if (t.sends()) out.push_back({Role::send, t.send_peer, t.a, {}});
    return out;
  }
  switch (t.op) {
    case CollectiveOp::all_gather:
      all_gather(plan, t, out);
      break;
    case CollectiveOp::reduce_scatter:
      reduce_scatter(plan, t, out);
      break;
    case CollectiveOp::all_to_all:
      all_to_all(plan, t, out);
      break;
    case CollectiveOp::none:
      break;
  }
  return out;
}

int64_t message_bytes(const Plan& plan, const Message& m) {
  return m.view.rows * plan.buffers[m.view.buffer].cols * dtype_bytes(plan.dtype);
}

}  // namespace fob
