// The discrete-event simulation's data (simulation.h): a task's state, the events, and the
// ports and flows of the fluid link model. Internal to src/sim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collective_steps.h"
#include "fob/plan.h"

namespace fob::sim_detail {

// How a deadlock message names a task.
inline std::string describe(const Plan& plan, int task) {
  return "rank " + std::to_string(plan.rank) + " task " + std::to_string(task) + " (" +
         plan.tasks[static_cast<size_t>(task)].label + ")";
}

struct TaskRef {
  int rank = -1;
  int task = -1;
};

// Ends sort before starts at the same instant, so a compute task that starts just as a
// transfer ends is not slowed by it, and one that starts with a transfer is. Compute starts
// come last of all and are not events: see Simulation::starting_. A transfer posted late
// because its rank was computing (comm_post) is posted after the ends at its instant, so a
// compute task that ended then no longer delays it. `launched`: a task's launch overhead is over.
enum class EventKind : uint8_t { flow_end, compute_end, flow_start, launched, comm_post };

struct Event {
  double time = 0;
  EventKind kind = EventKind::flow_end;
  uint64_t seq = 0;      // push order: ties broken the same way every run
  TaskRef a;             // compute: the task
  int flow = -1;         // flow_start, flow_end: the flow
  uint32_t version = 0;  // flow_end: stale unless it matches the flow's version
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

// Tasks in the order they were pushed, for the ones decided at one instant: a vector read from
// the front, emptied (its memory kept) when read to the end.
class InstantQueue {
 public:
  bool empty() const { return next_ == items_.size(); }
  void push(TaskRef ref) { items_.push_back(ref); }
  TaskRef pop() {
    const TaskRef ref = items_[next_++];
    if (next_ == items_.size()) {
      items_.clear();
      next_ = 0;
    }
    return ref;
  }

 private:
  std::vector<TaskRef> items_;
  size_t next_ = 0;
};

struct TaskState {
  int pending = 0;      // unfinished deps, plus the stream's previous task
  int halves = 0;       // point-to-point halves not yet delivered
  int collective = -1;  // the k of the rank's k-th collective, or -1
  bool posted = false, ended = false;
  bool beside_comm = false;  // a compute task of an overlapping plan that may run beside a transfer
  double start = 0, end = 0;
  TaskRef send_to, recv_from;  // the matching halves on the peers
};

// One half of a point-to-point message, for matching sends with receives.
struct Half {
  uint64_t key = 0;  // (receiver, sender - receiver, tag): see pair_transfers
  TaskRef ref;
  bool operator<(const Half& o) const {
    if (key != o.key) return key < o.key;
    return ref.task < o.ref.task;  // a rank's halves of one key meet in plan order
  }
};

// One rank's end of one link class: the flows now leaving (out) and arriving (in) over it.
struct Port {
  int cls = 0;
  std::vector<int> out, in;
};

// One link of a collective's running step: from rank r (its index in Flow::links) to `to`
// (the simulated rank standing for it).
struct CollectiveLink {
  int to = -1;
  int out_port = -1, in_port = -1;  // on r and on `to`
  double latency = 0, bytes_per_second = 0;
};

// A point-to-point message, or a whole collective, sharing bandwidth with the flows on its
// ports (fluid model). A message pays its latency first, then flows: `remaining` bytes at
// `rate`. A collective runs the entries of its schedule one after another, each flowing from
// its start: `remaining` is the fraction of the running entry left, and `period` what that
// whole entry (all its repeats) would take at the current shares. It is listed on the ports of
// the running entry's links only, so a pairwise all-to-all shares an inter-node port only
// during the steps that cross nodes.
struct Flow {
  TaskRef from, to;                      // message: sender and receiver halves (simulated ranks)
  double bytes_per_second = 0;           // message: its link's, between the ranks it joins
  int collective = -1;                   // the collective's index k, or -1 for a message
  CollectiveOp op = CollectiveOp::none;  // collective: its op, and nccl-tests' size of it
  int64_t size = 0;
  int out_port = -1, in_port = -1;  // message: on the sender and on the receiver
  bool flowing = false, scheduled = false;
  double remaining = 0, rate = 0, period = 0, since = 0;
  uint32_t version = 0;
  std::vector<CollectiveStep> steps;  // collective: its schedule (collective_steps.h)
  size_t step = 0;                    // collective: the running entry of `steps`
  std::vector<double> blocks;         // collective: per rank, the bytes it sends per step
  // An uneven all-to-all (Task::spans): per step, per rank, the bytes it sends that step, which
  // `blocks` takes on as the steps go; empty where every step sends `blocks`.
  std::vector<std::vector<double>> step_blocks;
  // Its latencies per step, per rank (the copies a transport makes of the pieces each rank sends
  // the step's peer), which `copies` takes on as the steps go; empty: every link pays
  // `latencies`.
  std::vector<std::vector<int>> step_copies;
  std::vector<int> copies;
  std::vector<CollectiveLink> links;  // collective: per rank, its link in the running entry
  int latencies = 1;           // collective: latencies each step pays (its copies), where uniform
  double reduce_per_byte = 0;  // collective: the receiver's reduction, seconds per byte
};

// A transfer posted late because its rank was computing, and when its launch was over.
struct Waiting {
  TaskRef ref;
  double launched = 0;
};

}  // namespace fob::sim_detail
