// Transport ce's tasks: where each message goes, agreed with the peers at prepare(), and the
// operations a task queues (ce_transport.h).
#include <algorithm>
#include <string>
#include <vector>

#include "ce_transport.h"
#include "fob/transfer_messages.h"
#include "kernels.h"

namespace fob {

namespace {

using Role = Message::Role;

// A peer's place among this rank's stage slots: ranks in order, this one left out.
int64_t stage_index(int peer, int rank) {
  return peer < rank ? peer : peer - 1;
}

int64_t byte_offset(const Plan& plan, const View& v) {
  return (v.row * plan.buffers[v.buffer].cols + v.col) * dtype_bytes(plan.dtype);
}

// The largest partial sum a reduce-scatter of the plan receives from one peer.
int64_t largest_partial(const Plan& plan) {
  int64_t most = 0;
  for (const Task& t : plan.tasks) {
    for (const Message& m : transfer_messages(plan, t)) {
      if (m.role == Role::reduce) most = std::max(most, message_bytes(plan, m));
    }
  }
  return most;
}

}  // namespace

// Per source rank, in plan order: where each of its messages to this rank lands. A partial sum
// lands in the stage (region buffers.size()), in the source's slot.
std::vector<std::vector<CeTransport::Slot>> CeTransport::receive_slots(const Plan& plan,
                                                                       int64_t* stage_bytes) const {
  const int64_t partial = largest_partial(plan);
  *stage_bytes = partial * (world_ - 1);
  const auto stage_region = static_cast<int64_t>(plan.buffers.size());
  std::vector<std::vector<Slot>> slots(static_cast<size_t>(world_));
  for (const Task& t : plan.tasks) {
    for (const Message& m : transfer_messages(plan, t)) {
      const int64_t bytes = message_bytes(plan, m);
      if (m.role == Role::receive) {
        slots[m.peer].push_back({m.view.buffer, byte_offset(plan, m.view), bytes});
      } else if (m.role == Role::reduce) {
        slots[m.peer].push_back({stage_region, stage_index(m.peer, rank_) * partial, bytes});
      }
    }
  }
  return slots;
}

// Tells every source where its messages land, and learns the same of every destination: the
// result's [d] is d's slots for this rank's messages, in the order this rank sends them.
std::vector<std::vector<CeTransport::Slot>> CeTransport::exchange_slots(
    const std::vector<std::vector<Slot>>& mine) const {
  constexpr int kWords = 3;  // a Slot's fields
  std::vector<int> send_counts(world_), recv_counts(world_), send_at(world_), recv_at(world_);
  std::vector<int64_t> out;
  for (int s = 0; s < world_; ++s) {
    send_at[s] = static_cast<int>(out.size());
    for (const Slot& slot : mine[s]) out.insert(out.end(), {slot.region, slot.offset, slot.bytes});
    send_counts[s] = static_cast<int>(out.size()) - send_at[s];
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm_);
  int total = 0;
  for (int d = 0; d < world_; ++d) {
    recv_at[d] = total;
    total += recv_counts[d];
  }
  std::vector<int64_t> in(static_cast<size_t>(total));
  MPI_Alltoallv(out.data(), send_counts.data(), send_at.data(), MPI_INT64_T, in.data(),
                recv_counts.data(), recv_at.data(), MPI_INT64_T, comm_);
  std::vector<std::vector<Slot>> to(static_cast<size_t>(world_));
  for (int d = 0; d < world_; ++d) {
    for (int i = recv_at[d]; i < recv_at[d] + recv_counts[d]; i += kWords) {
      to[d].push_back({in[i], in[i + 1], in[i + 2]});
    }
  }
  return to;
}

// A task's operations: every receive's ready flag first (nothing waits on them), this rank's
// own block, the sends, and last the waits for the arrivals (with the additions of partial sums
// after them). Each side waits only for what the other posts at the same place in its plan or
// earlier, which is NCCL's guarantee for plans queued in the same order on every rank.
void CeTransport::build_ops(const Plan& plan, Prepared& p,
                            const std::vector<std::vector<Slot>>& mine,
                            const std::vector<std::vector<Slot>>& to, Case& c) const {
  const PlanBuffers at(plan, p);
  std::vector<size_t> sent(world_, 0), received(world_, 0);
  c.ops.assign(plan.tasks.size(), {});
  for (const Task& t : plan.tasks) {
    std::vector<Op>& ops = c.ops[t.id];
    std::vector<Op> arrivals;
    for (const Message& m : transfer_messages(plan, t)) {
      const auto bytes = static_cast<size_t>(message_bytes(plan, m));
      void* here = at.device_at(m.view);
      if (m.role == Role::local) {
        const void* from = at.device_at(m.from);
        if (from != here) ops.push_back({Op::Kind::local, -1, here, from, bytes});
      } else if (m.role == Role::send) {
        const std::vector<Slot>& slots = to[m.peer];
        if (sent[m.peer] >= slots.size() ||
            slots[sent[m.peer]].bytes != static_cast<int64_t>(bytes)) {
          check_.fail("transport ce", "task " + std::to_string(t.id) + " '" + t.label +
                                          "' sends rank " + std::to_string(m.peer) +
                                          " a message its plan does not receive: every rank must "
                                          "run the same plan");
        }
        const Slot& slot = slots[sent[m.peer]++];
        char* region = static_cast<char*>(c.peer_regions[m.peer][slot.region]);
        ops.push_back({Op::Kind::send, m.peer, region + slot.offset, here, bytes});
        ++c.copies;
      } else {
        const Slot& slot = mine[m.peer][received[m.peer]++];
        ops.push_back({Op::Kind::ready, m.peer, nullptr, nullptr, 0});
        arrivals.push_back({Op::Kind::arrival, m.peer, nullptr, nullptr, 0});
        if (m.role == Role::reduce) {
          const int64_t count = m.view.rows * at.cols(m.view.buffer);
          arrivals.push_back(
              {Op::Kind::add, m.peer, here, static_cast<char*>(c.stage) + slot.offset, bytes});
          ++c.adds;
          c.add_blocks = std::max(c.add_blocks, cuda::add_blocks(count));
        }
      }
    }
    // The ready flags go first: a receive's place is free once the task's dependencies are.
    std::stable_partition(ops.begin(), ops.end(),
                          [](const Op& op) { return op.kind == Op::Kind::ready; });
    ops.insert(ops.end(), arrivals.begin(), arrivals.end());
  }
}

void CeTransport::queue_op(const Op& op, cudaStream_t stream, std::vector<uint32_t>& numbers,
                           size_t& next) {
  switch (op.kind) {
    case Op::Kind::ready:
      numbers.push_back(++received_[op.peer]);
      write_flag(stream, peer_word(op.peer, rank_), numbers.back(), "transport ce: ready flag");
      break;
    case Op::Kind::local:
      check_.cuda(cudaMemcpyAsync(op.dst, op.src, op.bytes, cudaMemcpyDeviceToDevice, stream),
                  "transport ce: copying this rank's own block");
      break;
    case Op::Kind::send: {
      const uint32_t n = ++sent_[op.peer];
      wait_flag(stream, own_word(op.peer), n, "transport ce: waiting for a peer to be ready");
      check_.cuda(cudaMemcpyAsync(op.dst, op.src, op.bytes, cudaMemcpyDeviceToDevice, stream),
                  "transport ce: copying into a peer's buffer");
      write_flag(stream, peer_word(op.peer, world_ + rank_), n, "transport ce: arrival flag");
      break;
    }
    case Op::Kind::arrival:
      wait_flag(stream, own_word(world_ + op.peer), numbers.at(next++),
                "transport ce: waiting for a peer's message");
      break;
    case Op::Kind::add:
      check_.cuda(cuda::add(dtype_, op.dst, op.src,
                            static_cast<int64_t>(op.bytes) / dtype_bytes(dtype_), stream),
                  "transport ce: adding a peer's partial sum");
      break;
  }
}

}  // namespace fob
