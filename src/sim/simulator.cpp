// The event loop of simulate_case (include/fob/sim.h): tasks becoming ready, launched, posted,
// computed and finished. Links are priced in simulation_flows.cpp.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fob/sim.h"
#include "simulation.h"

namespace fob {
namespace sim_detail {

Simulation::Simulation(const std::vector<Plan>& plans, int world, const CostModel& cost)
    : plans_(plans), cost_(cost), world_(world), held_(static_cast<int>(plans.size())) {
  const size_t n = plans.size();
  if (n == 0 || world < 1 || world % held_ != 0) {
    throw std::runtime_error("simulate_case: " + std::to_string(n) + " plans cannot stand for " +
                             std::to_string(world) + " ranks");
  }
  // Messages are matched on 16-bit ranks and offsets (pair_transfers).
  if (world > kMaxWorld) {
    throw std::runtime_error("simulate_case: " + std::to_string(world) +
                             " ranks is past the simulator's " + std::to_string(kMaxWorld));
  }
  const int period = cost.rotation_period(world);
  if (held_ < world && (period < 1 || held_ % period != 0)) {
    throw std::runtime_error("simulate_case: " + std::to_string(n) + " plans cannot stand for " +
                             std::to_string(world) + " ranks: the cost model repeats every " +
                             std::to_string(period) + " ranks");
  }
  // Every rank's tasks live in flat arrays, rank after rank: a simulation touches hundreds
  // of thousands of tasks, and one allocation per task would cost more than the events.
  base_.resize(n + 1, 0);
  for (size_t r = 0; r < n; ++r) base_[r + 1] = base_[r] + plans[r].tasks.size();
  state_.resize(base_[n]);
  collectives_.resize(n);
  in_flight_.assign(n, 0);
  reducing_.assign(n, 0);
  computing_until_.assign(n, kIdle);
  compute_active_.assign(n, 0);
  waiting_.assign(n, {});
  transfer_slowdown_ = cost_.transfer_slowdown_while_computing();
  comm_start_delay_ = cost_.comm_start_delay_while_computing();
  for (int stream = 0; stream < kNumStreams; ++stream) {
    launch_[static_cast<size_t>(stream)] = cost_.launch_seconds(static_cast<StreamId>(stream));
  }
  ports_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    if (plans[r].rank != static_cast<int>(r) || plans[r].world != world) {
      throw std::runtime_error("simulate_case: plan " + std::to_string(r) + " is rank " +
                               std::to_string(plans[r].rank) + " of " +
                               std::to_string(plans[r].world));
    }
  }
  link_streams();
  pair_transfers();
  check_collectives();
  mark_beside_comm();
}

void Simulation::run() {
  for (size_t r = 0; r < plans_.size(); ++r) {
    for (const Task& t : plans_[r].tasks) {
      if (st({static_cast<int>(r), t.id}).pending == 0) post({static_cast<int>(r), t.id});
    }
  }
  for (;;) {
    const bool event_now = !events_.empty() && events_.top().time <= now_;
    if (!starting_.empty() && !event_now) {
      start_compute(starting_.pop());
      continue;
    }
    if (!comm_ready_.empty() && !event_now) {
      post_comm(comm_ready_.pop());
      continue;
    }
    if (events_.empty()) break;
    const Event e = events_.top();
    events_.pop();
    if (e.kind == EventKind::flow_end && e.version != flows_[static_cast<size_t>(e.flow)].version) {
      continue;  // rescheduled since
    }
    now_ = e.time;
    switch (e.kind) {
      case EventKind::flow_end:
        end_flow(e.flow);
        break;
      case EventKind::flow_start:
        begin_flow(e.flow);
        break;
      case EventKind::launched:
        post_now(e.a);
        break;
      case EventKind::comm_post:
        if (!st(e.a).posted) post_now(e.a);
        break;
      case EventKind::compute_end:
        set_computing(e.a.rank, kIdle);
        if (comm_start_delay_ > 0) release_waiting(e.a.rank);
        finish(e.a);
        break;
    }
  }
  check_finished();
}

void Simulation::start_compute(TaskRef ref) {
  const DType dtype = plans_[static_cast<size_t>(ref.rank)].dtype;
  // A collective's adds on SMs take them from whatever computes beside them.
  double seconds = reducing_[static_cast<size_t>(ref.rank)] > 0
                       ? cost_.compute_seconds_while_reducing(task(ref), dtype, ref.rank)
                   : st(ref).beside_comm
                       ? cost_.compute_seconds_beside_comm(task(ref), dtype, ref.rank)
                       : cost_.compute_seconds(task(ref), dtype, ref.rank);
  if (in_flight_[static_cast<size_t>(ref.rank)] > 0) {
    seconds *= cost_.compute_slowdown_while_transferring();
  }
  push(now_ + seconds, EventKind::compute_end, ref);
  set_computing(ref.rank, now_ + seconds);
}

// Marks `rank` computing until `until`, or idle (kIdle), and re-rates the transfers at its
// ports when transfers slow down under compute.
void Simulation::set_computing(int rank, double until) {
  computing_until_[static_cast<size_t>(rank)] = until;
  if (transfer_slowdown_ == 1.0) return;
  for (const Port& p : ports_[static_cast<size_t>(rank)]) {
    for (int id : p.out) refresh(id);
    for (int id : p.in) refresh(id);
  }
}

// A task whose deps and stream predecessor have ended starts after its stream's launch
// overhead.
void Simulation::post(TaskRef ref) {
  const Task& t = task(ref);
  if (comm_start_delay_ > 0) {
    if (t.stream == StreamId::compute) compute_active_[static_cast<size_t>(ref.rank)] = 1;
    if (t.is_transfer()) {
      comm_ready_.push(ref);
      return;
    }
  }
  const double launch = launch_[static_cast<size_t>(t.stream)];
  if (launch > 0) {
    push(now_ + launch, EventKind::launched, ref);
  } else {
    post_now(ref);
  }
}

// A transfer that became ready now, once the compute tasks starting now have started: after
// its launch, and if its rank has a compute task launching or running now, the delay later,
// or when that compute task ends if sooner (release_waiting), but never before the launch.
// That is what calibrate measures: it sees when a task was ready and when it started.
void Simulation::post_comm(TaskRef ref) {
  const double launched = now_ + launch_[static_cast<size_t>(StreamId::comm)];
  if (compute_active_[static_cast<size_t>(ref.rank)]) {
    push(launched + comm_start_delay_, EventKind::comm_post, ref);
    waiting_[static_cast<size_t>(ref.rank)].push_back({ref, launched});
  } else if (launched > now_) {
    push(launched, EventKind::comm_post, ref);
  } else {
    post_now(ref);
  }
}

// The rank's compute task ended: the transfers still waiting for it are posted now, or when
// their launch is over. Their events at the end of the delay then find them posted.
void Simulation::release_waiting(int rank) {
  compute_active_[static_cast<size_t>(rank)] = 0;
  std::vector<Waiting>& waiting = waiting_[static_cast<size_t>(rank)];
  for (const Waiting& w : waiting) {
    if (st(w.ref).posted) continue;  // its delay ran out first
    if (w.launched > now_) {
      push(w.launched, EventKind::comm_post, w.ref);
    } else {
      post_now(w.ref);
    }
  }
  waiting.clear();
}

void Simulation::post_now(TaskRef ref) {
  TaskState& s = st(ref);
  const Task& t = task(ref);
  s.start = now_;
  switch (t.kind) {
    case TaskKind::gemm:
    case TaskKind::add:
    case TaskKind::copy:
    case TaskKind::softmax:
    case TaskKind::online_softmax:
    case TaskKind::softmax_finish:
    case TaskKind::gather:
    case TaskKind::glu:
      s.posted = true;
      // Priced once every transfer starting at this instant has started.
      starting_.push(ref);
      return;
    case TaskKind::collective:
      s.posted = true;
      post_collective(ref);
      return;
    case TaskKind::send:
    case TaskKind::recv:
    case TaskKind::exchange:
      break;
  }
  // A message starts once both of its ends are posted. The receive half is checked after
  // `posted` is set, so a task that sends to itself starts its message exactly once.
  if (t.sends() && st(s.send_to).posted) start_message(ref, s.send_to);
  s.posted = true;
  if (t.receives() && st(s.recv_from).posted) start_message(s.recv_from, ref);
  if (s.halves == 0) finish(ref);
}

void Simulation::half_delivered(TaskRef ref) {
  if (--st(ref).halves == 0) finish(ref);
}

void Simulation::finish(TaskRef ref) {
  TaskState& s = st(ref);
  s.end = now_;
  s.ended = true;
  const size_t g = index(ref);
  for (int i = dependents_begin_[g]; i < dependents_begin_[g + 1]; ++i) {
    const TaskRef next{ref.rank, dependents_[static_cast<size_t>(i)]};
    if (--st(next).pending == 0) post(next);
  }
}

}  // namespace sim_detail

using sim_detail::Simulation;
using sim_detail::TaskState;

CaseResult simulate_case(const std::vector<Plan>& plans, int world, const CostModel& cost,
                         const std::string& case_id) {
  if (plans.empty()) throw std::runtime_error("simulate_case: no plans");
  Simulation sim(plans, world, cost);
  sim.run();

  CaseResult result = case_from_plan(plans.front(), world, case_id);
  result.verified = -1;
  if (static_cast<int>(plans.size()) < world) result.stored = static_cast<int32_t>(plans.size());
  std::vector<const Plan*> ranks;
  for (const Plan& p : plans) ranks.push_back(&p);
  set_task_table(result, ranks);
  RoundTimes round = empty_round(result, 1);
  for (size_t r = 0; r < plans.size(); ++r) {
    const int rank = static_cast<int>(r);
    double last = 0;
    for (const Task& t : plans[r].tasks) {
      const TaskState& s = sim.at(rank, t.id);
      round.task_start[result.timing_index(0, rank, t.id)] = s.start;
      round.task_end[result.timing_index(0, rank, t.id)] = s.end;
      last = std::max(last, s.end);
    }
    round.step_seconds[r] = last;
  }
  append_round(result, round);
  return result;
}

CaseResult simulate_case(const std::vector<Plan>& plans, const CostModel& cost,
                         const std::string& case_id) {
  return simulate_case(plans, static_cast<int>(plans.size()), cost, case_id);
}

}  // namespace fob
