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
  const PeerSpans blocks = all_to_all_blocks(plan, t);
  auto view = [](const View& v, const RowSpan& span) {
    return View{v.buffer, span.row, span.rows, v.col, v.cols};
  };
  for (int j = 0; j < world; ++j) {
    if (j == rank) continue;
    for (const RowSpan& span : blocks.recv[j])
      out.push_back({Role::receive, j, view(t.c, span), {}});
  }
  const std::vector<RowSpan>& own_from = blocks.send[rank];
  const std::vector<RowSpan>& own_to = blocks.recv[rank];
  for (size_t i = 0; i < own_to.size() && i < own_from.size(); ++i) {
    out.push_back({Role::local, -1, view(t.c, own_to[i]), view(t.a, own_from[i])});
  }
  for (int j : peers_from(rank, world)) {
    for (const RowSpan& span : blocks.send[j]) out.push_back({Role::send, j, view(t.a, span), {}});
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

PeerSpans all_to_all_blocks(const Plan& plan, const Task& t) {
  if (t.spans >= 0) return plan.peer_spans.at(static_cast<size_t>(t.spans));
  PeerSpans blocks;
  blocks.send.resize(static_cast<size_t>(plan.world));
  blocks.recv.resize(static_cast<size_t>(plan.world));
  for (int j = 0; j < plan.world; ++j) {
    for (int i = 0; i < t.batch; ++i) {
      blocks.send[j].push_back({t.a.row + j * t.src_stride_rows + i * t.a_step.rows, t.a.rows});
      blocks.recv[j].push_back({t.c.row + j * t.dst_stride_rows + i * t.c_step.rows, t.c.rows});
    }
  }
  return blocks;
}

std::vector<int64_t> all_to_all_sent_bytes(const Plan& plan, const Task& t) {
  const PeerSpans blocks = all_to_all_blocks(plan, t);
  const int64_t row_bytes =
      plan.buffers.at(static_cast<size_t>(t.a.buffer)).cols * dtype_bytes(plan.dtype);
  std::vector<int64_t> bytes(static_cast<size_t>(plan.world), 0);
  for (int j = 0; j < plan.world; ++j) {
    if (j == plan.rank) continue;
    for (const RowSpan& span : blocks.send[j]) bytes[j] += span.rows * row_bytes;
  }
  return bytes;
}

int64_t message_bytes(const Plan& plan, const Message& m) {
  return m.view.rows * plan.buffers[m.view.buffer].cols * dtype_bytes(plan.dtype);
}

}  // namespace fob
