// How the simulator, and calibrate reading measured collectives, break a collective into
// steps: the schedule the host backends run (src/backends/host/ring.h). Internal to src/sim.
//
// Every collective is N-1 steps. In each step every rank r sends one block (Task::bytes / (N-1),
// the bytes it sends over all steps split evenly) to rank r + shift and receives one from
// r - shift, and a step lasts as long as its slowest link: latency + block / bandwidth alone,
// (N-1)(alpha + beta * block) for the whole collective over uniform links.
//   all_gather, reduce_scatter: the ring; every step uses the link r -> r+1 (shift 1).
//   all_to_all: pairwise; step s = 1..N-1 uses r -> r+s, so its steps can cross different link
//     classes (a step's links are intra-node for some ranks and inter-node for others).
// NCCL runs an all-to-all differently: one group of ncclSend/ncclRecv to every peer, all in
// flight at once, so the latency is paid about once rather than N-1 times, and the messages
// share the rank's bandwidth instead of taking turns. The simulator prices the host pairwise
// form; for an NCCL all-to-all it overprices by about (N-2) latencies, which only matters for
// small blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fob/plan.h"
#include "fob/transfer_messages.h"

namespace fob::sim_detail {

// `repeat` steps in a row in which every rank r sends its block to rank r + shift (mod N).
struct CollectiveStep {
  int shift = 1;
  int repeat = 1;
};

// The steps of `op` on `world` ranks; empty on one rank (nothing moves).
inline std::vector<CollectiveStep> collective_schedule(CollectiveOp op, int world) {
  if (world < 2) return {};
  if (op != CollectiveOp::all_to_all) return {{1, ring_steps(world)}};
  std::vector<CollectiveStep> steps;
  steps.reserve(static_cast<size_t>(world - 1));
  for (int s = 1; s < world; ++s) steps.push_back({s, 1});
  return steps;
}

// How many steps (and so blocks per rank) `op` takes on `world` ranks: N-1 for every op.
inline int collective_step_count(CollectiveOp op, int world) {
  int count = 0;
  for (const CollectiveStep& s : collective_schedule(op, world)) count += s.repeat;
  return count;
}

// The block every step of a collective is priced by, from each rank's plan and task of it: the
// largest Task::bytes / steps, or, for an uneven all-to-all (Task::spans), the mean over the
// steps of each step's largest block, since every step waits for its slowest link: what the
// simulator's steps add up to, so that calibrate reads a measured collective the same way.
inline int64_t priced_block(const std::vector<const Plan*>& plans,
                            const std::vector<const Task*>& tasks, int steps) {
  int64_t block = 0;
  for (const Task* t : tasks) block = std::max(block, t->bytes / std::max(steps, 1));
  if (tasks.empty() || tasks.front()->spans < 0 || plans.empty()) return block;
  const int world = plans.front()->world;
  std::vector<int64_t> largest(static_cast<size_t>(world), 0);  // per shift
  for (size_t r = 0; r < tasks.size(); ++r) {
    const std::vector<int64_t> sent = all_to_all_sent_bytes(*plans[r], *tasks[r]);
    for (int s = 1; s < world; ++s) {
      const int64_t to_peer = sent[static_cast<size_t>((plans[r]->rank + s) % world)];
      largest[static_cast<size_t>(s)] = std::max(largest[static_cast<size_t>(s)], to_peer);
    }
  }
  int64_t sum = 0;
  for (int64_t b : largest) sum += b;
  return sum / std::max(steps, 1);
}

}  // namespace fob::sim_detail
