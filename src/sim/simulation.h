// The discrete-event simulation behind simulate_case (include/fob/sim.h), in three files:
// simulator.cpp runs the events (tasks ready, launched, posted, computed, finished),
// simulation_setup.cpp checks and pairs the plans before the run (stream order, dependencies,
// sends with receives, collectives across ranks), and simulation_flows.cpp prices messages and
// collectives on shared links. Internal to src/sim.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "fob/sim.h"
#include "simulation_data.h"

namespace fob::sim_detail {

class Simulation {
 public:
  // Checks the plans and pairs their transfers; throws std::runtime_error naming the rank and
  // task of what does not match. `plans` are ranks 0..d-1 of a case of `world` ranks (d divides
  // world), standing for all of them: rank r runs as rank r % d does, with its peers moved by
  // r - r % d (sim.h, simulate). With d = world every rank is simulated.
  Simulation(const std::vector<Plan>& plans, int world, const CostModel& cost);
  // Runs every task to its end; throws on a deadlock.
  void run();
  const TaskState& at(int rank, int task) const { return state_[index({rank, task})]; }

 private:
  const Task& task(TaskRef t) const {
    return plans_[static_cast<size_t>(t.rank)].tasks[static_cast<size_t>(t.task)];
  }
  size_t index(TaskRef t) const {
    return base_[static_cast<size_t>(t.rank)] + static_cast<size_t>(t.task);
  }
  TaskState& st(TaskRef t) { return state_[index(t)]; }
  // The simulated rank that stands for `rank`.
  int held(int rank) const { return rank % held_; }
  void push(double time, EventKind kind, TaskRef a, int flow = -1, uint32_t version = 0) {
    events_.push(Event{time, kind, seq_++, a, flow, version});
  }
  bool computing(int rank) const { return computing_until_[static_cast<size_t>(rank)] != kIdle; }

  // simulation_setup.cpp: before the run.
  void link_streams();
  void pair_transfers();
  void check_collectives();
  void check_finished() const;
  void mark_beside_comm();

  // simulator.cpp: tasks.
  void start_compute(TaskRef ref);
  void set_computing(int rank, double until);
  void post(TaskRef ref);
  void post_comm(TaskRef ref);
  void release_waiting(int rank);
  void post_now(TaskRef ref);
  void half_delivered(TaskRef ref);
  void finish(TaskRef ref);

  // simulation_flows.cpp: messages and collectives on the links.
  int port(int rank, int cls);
  Port& port_at(int rank, int index) {
    return ports_[static_cast<size_t>(rank)][static_cast<size_t>(index)];
  }
  Flow& flow(int id) { return flows_[static_cast<size_t>(id)]; }
  void start_message(TaskRef from, TaskRef to);
  void post_collective(TaskRef ref);
  std::vector<CollectiveLink> links_for(int shift, const Flow& f);
  void add_uneven_blocks(int r, const Task& t, Flow& f);
  void next_step(int id);
  template <typename Fn>
  void for_each_port(int id, Fn&& fn);
  void begin_flow(int id);
  void unlist(int id);
  void end_flow(int id);
  void refresh_neighbours(int id);
  size_t share(int rank_out, int out_port, int rank_in, int in_port);
  void refresh(int id);
  double collective_step_seconds(const Flow& f);

  const std::vector<Plan>& plans_;
  const CostModel& cost_;
  int world_ = 0;                      // ranks in the case
  int held_ = 0;                       // ranks simulated: plans_.size(), a divisor of world_
  std::vector<size_t> base_;           // per rank: its first task's index in the flat arrays
  std::vector<TaskState> state_;       // per task, flat
  std::vector<int> dependents_begin_;  // per task, flat: its first entry in dependents_
  std::vector<int> dependents_;        // the task ids that wait for each task, by rank
  std::vector<std::vector<int>> collectives_;  // per rank: task ids of its collectives
  std::vector<int> collective_posted_;         // ranks that have posted the k-th one
  std::vector<int> in_flight_;                 // transfers to or from each rank
  std::vector<int> reducing_;  // per rank: collectives in flight whose receiver reduces on SMs
  static constexpr double kIdle = -1;
  std::vector<double> computing_until_;  // per rank: its compute task's end, or kIdle
  // With a comm start delay, per rank: whether a compute task is launching or running, and the
  // transfers posted late because of it.
  std::vector<uint8_t> compute_active_;
  std::vector<std::vector<Waiting>> waiting_;
  double transfer_slowdown_ = 1, comm_start_delay_ = 0;
  std::array<double, kNumStreams> launch_{};  // per stream: from ready to started
  std::vector<std::vector<Port>> ports_;      // per rank, one per link class in use
  std::vector<Flow> flows_;                   // every message and collective started
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  // Compute tasks posted at now_, in post order. They start after every event of this instant,
  // those that events of this instant add included, which a queue of their own gives without
  // a heap operation per task.
  InstantQueue starting_;
  // With a comm start delay: transfers that became ready at now_, decided after starting_.
  InstantQueue comm_ready_;
  uint64_t seq_ = 0;
  double now_ = 0;
};

}  // namespace fob::sim_detail
