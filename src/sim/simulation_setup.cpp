// Checking and pairing the plans before a simulation runs (simulation.h).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fob/device_plan.h"
#include "simulation.h"

namespace fob::sim_detail {

// Each task waits for its deps and for the previous task of its stream. The tasks that wait
// for a task are kept in one array for all tasks (dependents_, indexed by dependents_begin_).
void Simulation::link_streams() {
  dependents_begin_.assign(state_.size() + 1, 0);
  std::vector<int> previous(state_.size(), -1);  // the stream's previous task, or -1
  for (size_t r = 0; r < plans_.size(); ++r) {
    const Plan& p = plans_[r];
    int last[kNumStreams] = {-1, -1};
    for (const Task& t : p.tasks) {
      const size_t i = static_cast<size_t>(t.id);
      if (t.id != static_cast<int>(&t - p.tasks.data())) {
        throw std::runtime_error("simulate_case: task ids out of order on rank " +
                                 std::to_string(r));
      }
      const size_t g = base_[r] + i;
      for (int d : t.deps) {
        if (d < 0 || d >= t.id) {
          throw std::runtime_error("simulate_case: " + describe(p, t.id) +
                                   " depends on a task that does not precede it");
        }
        ++dependents_begin_[base_[r] + static_cast<size_t>(d) + 1];
      }
      int& prev = last[static_cast<size_t>(t.stream)];
      if (prev >= 0) ++dependents_begin_[base_[r] + static_cast<size_t>(prev) + 1];
      previous[g] = prev;
      state_[g].pending = static_cast<int>(t.deps.size()) + (prev >= 0 ? 1 : 0);
      prev = t.id;
      if (t.kind == TaskKind::collective) {
        state_[g].collective = static_cast<int>(collectives_[r].size());
        collectives_[r].push_back(t.id);
      }
    }
  }
  for (size_t g = 0; g < state_.size(); ++g) dependents_begin_[g + 1] += dependents_begin_[g];
  dependents_.resize(static_cast<size_t>(dependents_begin_.back()));
  std::vector<int> fill(dependents_begin_.begin(), dependents_begin_.end() - 1);
  for (size_t r = 0; r < plans_.size(); ++r) {
    for (const Task& t : plans_[r].tasks) {
      auto add = [&](int on) {
        dependents_[static_cast<size_t>(fill[base_[r] + static_cast<size_t>(on)]++)] = t.id;
      };
      for (int d : t.deps) add(d);
      const int prev = previous[base_[r] + static_cast<size_t>(t.id)];
      if (prev >= 0) add(prev);
    }
  }
}

// The k-th send from r to p with tag t meets the k-th receive on p from r with tag t (MPI's
// non-overtaking order). Both sides are sorted by (receiver, sender - receiver mod N, tag) and
// then walked together. With fewer ranks simulated than the case has, the receiver is the
// simulated rank q standing for p, and the sender r - (p - q) (of the same offset) is the one
// whose send it receives: the offset and the tag name the same message on both sides.
void Simulation::pair_transfers() {
  const int n = world_;
  auto key = [n](int receiver, int offset, int tag) {
    offset = (offset % n + n) % n;
    return (static_cast<uint64_t>(static_cast<uint16_t>(receiver)) << 48) |
           (static_cast<uint64_t>(static_cast<uint16_t>(offset)) << 32) |
           static_cast<uint64_t>(static_cast<uint32_t>(tag));
  };
  std::vector<Half> send_halves, recv_halves;
  for (const Plan& p : plans_) {
    for (const Task& t : p.tasks) {
      const bool s = t.sends(), rcv = t.receives();
      if ((s && (t.send_peer < 0 || t.send_peer >= n)) ||
          (rcv && (t.recv_peer < 0 || t.recv_peer >= n))) {
        throw std::runtime_error("simulate_case: " + describe(p, t.id) + " names a peer outside " +
                                 "the world size " + std::to_string(n));
      }
      if (s)
        send_halves.push_back(
            {key(held(t.send_peer), p.rank - t.send_peer, t.tag), {p.rank, t.id}});
      if (rcv) recv_halves.push_back({key(p.rank, t.recv_peer - p.rank, t.tag), {p.rank, t.id}});
      st({p.rank, t.id}).halves = (s ? 1 : 0) + (rcv ? 1 : 0);
    }
  }
  std::sort(send_halves.begin(), send_halves.end());
  std::sort(recv_halves.begin(), recv_halves.end());
  flows_.reserve(send_halves.size() + collectives_.front().size());
  size_t i = 0, j = 0;
  while (i < send_halves.size() || j < recv_halves.size()) {
    if (j == recv_halves.size() ||
        (i < send_halves.size() && send_halves[i].key < recv_halves[j].key)) {
      const TaskRef r = send_halves[i].ref;
      throw std::runtime_error("simulate_case: unmatched transfer: " +
                               describe(plans_[static_cast<size_t>(r.rank)], r.task) +
                               " sends with no receive to meet it");
    }
    if (i == send_halves.size() || recv_halves[j].key < send_halves[i].key) {
      const TaskRef r = recv_halves[j].ref;
      throw std::runtime_error("simulate_case: unmatched transfer: " +
                               describe(plans_[static_cast<size_t>(r.rank)], r.task) +
                               " receives with no send to meet it");
    }
    st(send_halves[i].ref).send_to = recv_halves[j].ref;
    st(recv_halves[j].ref).recv_from = send_halves[i].ref;
    ++i;
    ++j;
  }
}

// Every rank must run the same collectives in the same order.
void Simulation::check_collectives() {
  for (size_t r = 1; r < plans_.size(); ++r) {
    const std::vector<int>& mine = collectives_[r];
    const std::vector<int>& first = collectives_[0];
    for (size_t k = 0; k < std::max(mine.size(), first.size()); ++k) {
      if (k >= mine.size() || k >= first.size() ||
          plans_[r].tasks[static_cast<size_t>(mine[k])].op !=
              plans_[0].tasks[static_cast<size_t>(first[k])].op) {
        const bool on_r = k < mine.size();
        throw std::runtime_error(
            "simulate_case: unmatched collective: " +
            (on_r ? describe(plans_[r], mine[k]) : describe(plans_[0], first[k])) +
            " has no counterpart on rank " + std::to_string(on_r ? 0 : r));
      }
    }
  }
  collective_posted_.assign(collectives_.empty() ? 0 : collectives_[0].size(), 0);
}

void Simulation::check_finished() const {
  // Report a posted task first: it is the one stuck waiting for its peer.
  for (int want_posted : {1, 0}) {
    for (size_t r = 0; r < plans_.size(); ++r) {
      for (size_t i = 0; i < plans_[r].tasks.size(); ++i) {
        const TaskState& s = state_[base_[r] + i];
        if (!s.ended && s.posted == (want_posted == 1)) {
          throw std::runtime_error(
              "simulate_case: deadlock: " + describe(plans_[r], static_cast<int>(i)) +
              (s.posted ? " waits forever for its peer" : " never becomes ready"));
        }
      }
    }
  }
}

// The compute tasks that may run beside a transfer of an overlapping plan, as the cuda backend
// finds them for its SM target (device_plan.h).
void Simulation::mark_beside_comm() {
  for (size_t r = 0; r < plans_.size(); ++r) {
    const std::vector<char> beside = tasks_beside_transfers(plans_[r]);
    for (size_t i = 0; i < beside.size(); ++i) state_[base_[r] + i].beside_comm = beside[i] != 0;
  }
}

}  // namespace fob::sim_detail
