#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fob/sim.h"
#include "simulation_data.h"

namespace fob {
namespace {

using namespace sim_detail;  // NOLINT: the data this file simulates with

class Simulation {
 public:
  Simulation(const std::vector<Plan>& plans, const CostModel& cost) : plans_(plans), cost_(cost) {
    const size_t n = plans.size();
    // Every rank's tasks live in flat arrays, rank after rank: a simulation touches hundreds
    // of thousands of tasks, and one allocation per task would cost more than the events.
    base_.resize(n + 1, 0);
    for (size_t r = 0; r < n; ++r) base_[r + 1] = base_[r] + plans[r].tasks.size();
    state_.resize(base_[n]);
    collectives_.resize(n);
    in_flight_.assign(n, 0);
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
      if (plans[r].rank != static_cast<int>(r) || plans[r].world != static_cast<int>(n)) {
        throw std::runtime_error("simulate_case: plan " + std::to_string(r) + " is rank " +
                                 std::to_string(plans[r].rank) + " of " +
                                 std::to_string(plans[r].world));
      }
    }
    link_streams();
    pair_transfers();
    check_collectives();
  }

  void run() {
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
      if (e.kind == EventKind::flow_end &&
          e.version != flows_[static_cast<size_t>(e.flow)].version) {
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

  void start_compute(TaskRef ref) {
    double seconds =
        cost_.compute_seconds(task(ref), plans_[static_cast<size_t>(ref.rank)].dtype, ref.rank);
    if (in_flight_[static_cast<size_t>(ref.rank)] > 0) {
      seconds *= cost_.compute_slowdown_while_transferring();
    }
    push(now_ + seconds, EventKind::compute_end, ref);
    set_computing(ref.rank, now_ + seconds);
  }

  bool computing(int rank) const { return computing_until_[static_cast<size_t>(rank)] != kIdle; }

  // Marks `rank` computing until `until`, or idle (kIdle), and re-rates the transfers at its
  // ports when transfers slow down under compute.
  void set_computing(int rank, double until) {
    computing_until_[static_cast<size_t>(rank)] = until;
    if (transfer_slowdown_ == 1.0) return;
    for (const Port& p : ports_[static_cast<size_t>(rank)]) {
      for (int id : p.out) refresh(id);
      for (int id : p.in) refresh(id);
    }
  }

  const TaskState& at(int rank, int task) const { return state_[index({rank, task})]; }

 private:
  const Task& task(TaskRef t) const {
    return plans_[static_cast<size_t>(t.rank)].tasks[static_cast<size_t>(t.task)];
  }
  size_t index(TaskRef t) const {
    return base_[static_cast<size_t>(t.rank)] + static_cast<size_t>(t.task);
  }
  TaskState& st(TaskRef t) { return state_[index(t)]; }

  // Each task waits for its deps and for the previous task of its stream. The tasks that wait
  // for a task are kept in one array for all tasks (dependents_, indexed by dependents_begin_).
  void link_streams() {
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
  // non-overtaking order). Both sides are sorted by (sender, receiver, tag) and then walked
  // together.
  void pair_transfers() {
    const int n = static_cast<int>(plans_.size());
    auto key = [](int from, int to, int tag) {
      return (static_cast<uint64_t>(static_cast<uint16_t>(from)) << 48) |
             (static_cast<uint64_t>(static_cast<uint16_t>(to)) << 32) |
             static_cast<uint64_t>(static_cast<uint32_t>(tag));
    };
    std::vector<Half> send_halves, recv_halves;
    for (const Plan& p : plans_) {
      for (const Task& t : p.tasks) {
        const bool s = t.sends(), rcv = t.receives();
        if ((s && t.send_peer >= n) || (rcv && t.recv_peer >= n)) {
          throw std::runtime_error("simulate_case: " + describe(p, t.id) + " names a peer past " +
                                   "the world size " + std::to_string(n));
        }
        if (s) send_halves.push_back({key(p.rank, t.send_peer, t.tag), {p.rank, t.id}});
        if (rcv) recv_halves.push_back({key(t.recv_peer, p.rank, t.tag), {p.rank, t.id}});
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
  void check_collectives() {
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

  void push(double time, EventKind kind, TaskRef a, int flow = -1, uint32_t version = 0) {
    events_.push(Event{time, kind, seq_++, a, flow, version});
  }

  // A task whose deps and stream predecessor have ended starts after its stream's launch
  // overhead.
  void post(TaskRef ref) {
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
  void post_comm(TaskRef ref) {
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
  void release_waiting(int rank) {
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

  void post_now(TaskRef ref) {
    TaskState& s = st(ref);
    const Task& t = task(ref);
    s.start = now_;
    switch (t.kind) {
      case TaskKind::gemm:
      case TaskKind::add:
      case TaskKind::copy:
      case TaskKind::softmax:
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

  // The port of `rank` for link class `cls`, made on first use (a rank has few classes).
  int port(int rank, int cls) {
    std::vector<Port>& ports = ports_[static_cast<size_t>(rank)];
    for (size_t i = 0; i < ports.size(); ++i) {
      if (ports[i].cls == cls) return static_cast<int>(i);
    }
    ports.push_back(Port{cls, {}, {}});
    return static_cast<int>(ports.size() - 1);
  }
  Port& port_at(int rank, int index) {
    return ports_[static_cast<size_t>(rank)][static_cast<size_t>(index)];
  }
  Flow& flow(int id) { return flows_[static_cast<size_t>(id)]; }

  void start_message(TaskRef from, TaskRef to) {
    ++in_flight_[static_cast<size_t>(from.rank)];
    ++in_flight_[static_cast<size_t>(to.rank)];
    const int cls = cost_.link_class(from.rank, to.rank);
    const int id = static_cast<int>(flows_.size());
    Flow f;
    f.from = from;
    f.to = to;
    f.out_port = port(from.rank, cls);
    f.in_port = port(to.rank, cls);
    f.remaining = static_cast<double>(task(from).bytes);
    flows_.push_back(std::move(f));
    const double latency = cost_.latency_seconds(from.rank, to.rank);
    if (latency > 0) {
      push(now_ + latency, EventKind::flow_start, TaskRef{}, id);
    } else {
      begin_flow(id);
    }
  }

  void post_collective(TaskRef ref) {
    const int k = st(ref).collective;
    const size_t n = plans_.size();
    if (++collective_posted_[static_cast<size_t>(k)] < static_cast<int>(n)) return;
    // Every rank has posted it.
    for (size_t r = 0; r < n; ++r) ++in_flight_[r];
    const int id = static_cast<int>(flows_.size());
    Flow f;
    f.collective = k;
    f.remaining = 1;
    if (n > 1) {
      f.steps = ring_steps(static_cast<int>(n));
      f.links.resize(n);
      for (size_t r = 0; r < n; ++r) {
        const Task& t =
            plans_[r].tasks[static_cast<size_t>(collectives_[r][static_cast<size_t>(k)])];
        const int from = static_cast<int>(r), to = static_cast<int>((r + 1) % n);
        const int cls = cost_.link_class(from, to);
        RingLink& l = f.links[r];
        l.out_port = port(from, cls);
        l.in_port = port(to, cls);
        l.latency = cost_.latency_seconds(from, to);
        l.bytes_per_second = cost_.bytes_per_second(from, to);
        // Task::bytes counts what this rank sends over all steps.
        l.block = static_cast<double>(t.bytes / f.steps);
      }
    }
    flows_.push_back(std::move(f));
    begin_flow(id);
  }

  // The flows whose rate may change when `id` starts or stops flowing: those sharing a port
  // with it, itself included while it is listed.
  template <typename Fn>
  void for_each_port(int id, Fn&& fn) {
    const Flow& f = flow(id);
    if (f.collective < 0) {
      fn(port_at(f.from.rank, f.out_port).out);
      fn(port_at(f.to.rank, f.in_port).in);
      return;
    }
    const int n = static_cast<int>(f.links.size());
    for (int r = 0; r < n; ++r) {
      const RingLink& l = f.links[static_cast<size_t>(r)];
      fn(port_at(r, l.out_port).out);
      fn(port_at((r + 1) % n, l.in_port).in);
    }
  }

  void begin_flow(int id) {
    flow(id).flowing = true;
    flow(id).since = now_;
    for_each_port(id, [id](std::vector<int>& list) { list.push_back(id); });
    refresh_neighbours(id);
  }

  void end_flow(int id) {
    Flow& f = flow(id);
    f.flowing = false;
    for_each_port(id, [id](std::vector<int>& list) {
      const auto it = std::find(list.begin(), list.end(), id);
      *it = list.back();
      list.pop_back();
    });
    refresh_neighbours(id);
    if (f.collective < 0) {
      const TaskRef from = f.from, to = f.to;
      --in_flight_[static_cast<size_t>(from.rank)];
      --in_flight_[static_cast<size_t>(to.rank)];
      half_delivered(from);
      half_delivered(to);
      return;
    }
    const size_t k = static_cast<size_t>(f.collective);
    for (size_t r = 0; r < plans_.size(); ++r) {
      --in_flight_[r];
      finish({static_cast<int>(r), collectives_[r][k]});
    }
  }

  // Rates after `id` started or stopped flowing: its own (when it flows) and those of the flows
  // on its ports (refreshing changes neither the lists nor the flow vector). A flow on two of
  // these ports is refreshed twice; the second finds its rate unchanged.
  void refresh_neighbours(int id) {
    if (flow(id).flowing) refresh(id);
    for_each_port(id, [this, id](const std::vector<int>& list) {
      for (int other : list) {
        if (other != id) refresh(other);
      }
    });
  }

  size_t share(int rank_out, int out_port, int rank_in, int in_port) {
    return std::max(port_at(rank_out, out_port).out.size(), port_at(rank_in, in_port).in.size());
  }

  // Brings a flowing flow's progress up to now under its old rate and reschedules its end under
  // the current shares, when they changed it.
  void refresh(int id) {
    Flow& f = flow(id);
    double rate = 0, period = 0;
    if (f.collective < 0) {
      const double bw = cost_.bytes_per_second(f.from.rank, f.to.rank);
      const size_t s = share(f.from.rank, f.out_port, f.to.rank, f.in_port);
      rate = s == 1 ? bw : bw / static_cast<double>(s);
      if (computing(f.from.rank) || computing(f.to.rank)) rate /= transfer_slowdown_;
      if (f.scheduled && rate == f.rate) return;
    } else {
      // Each ring step waits for the slowest link's block at that link's share.
      const int n = static_cast<int>(f.links.size());
      double step = 0;
      for (int r = 0; r < n; ++r) {
        const RingLink& l = f.links[static_cast<size_t>(r)];
        const size_t s = share(r, l.out_port, (r + 1) % n, l.in_port);
        double seconds = l.block * static_cast<double>(s) / l.bytes_per_second;
        if (computing(r) || computing((r + 1) % n)) seconds *= transfer_slowdown_;
        step = std::max(step, l.latency + seconds);
      }
      period = step * f.steps;
      if (f.scheduled && period == f.period) return;
    }
    if (f.scheduled) {
      const double elapsed = now_ - f.since;
      if (f.collective < 0) {
        f.remaining = std::max(0.0, f.remaining - elapsed * f.rate);
      } else if (f.period > 0) {
        f.remaining = std::max(0.0, f.remaining - elapsed / f.period);
      }
    }
    f.since = now_;
    f.rate = rate;
    f.period = period;
    f.scheduled = true;
    ++f.version;
    const double left =
        f.collective < 0 ? (f.remaining > 0 ? f.remaining / rate : 0.0) : f.remaining * period;
    push(now_ + left, EventKind::flow_end, TaskRef{}, id, f.version);
  }

  void half_delivered(TaskRef ref) {
    if (--st(ref).halves == 0) finish(ref);
  }

  void finish(TaskRef ref) {
    TaskState& s = st(ref);
    s.end = now_;
    s.ended = true;
    const size_t g = index(ref);
    for (int i = dependents_begin_[g]; i < dependents_begin_[g + 1]; ++i) {
      const TaskRef next{ref.rank, dependents_[static_cast<size_t>(i)]};
      if (--st(next).pending == 0) post(next);
    }
  }

  void check_finished() const {
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

  const std::vector<Plan>& plans_;
  const CostModel& cost_;
  std::vector<size_t> base_;           // per rank: its first task's index in the flat arrays
  std::vector<TaskState> state_;       // per task, flat
  std::vector<int> dependents_begin_;  // per task, flat: its first entry in dependents_
  std::vector<int> dependents_;        // the task ids that wait for each task, by rank
  std::vector<std::vector<int>> collectives_;  // per rank: task ids of its collectives
  std::vector<int> collective_posted_;         // ranks that have posted the k-th one
  std::vector<int> in_flight_;                 // transfers to or from each rank
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

}  // namespace

CaseResult simulate_case(const std::vector<Plan>& plans, const CostModel& cost,
                         const std::string& case_id) {
  if (plans.empty()) throw std::runtime_error("simulate_case: no plans");
  Simulation sim(plans, cost);
  sim.run();

  CaseResult result = case_from_plan(plans.front(), static_cast<int>(plans.size()), case_id);
  result.verified = -1;
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

}  // namespace fob
