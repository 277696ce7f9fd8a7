// Messages and collectives on shared links: the fluid model of simulation.h.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "fob/transfer_messages.h"
#include "simulation.h"

namespace fob::sim_detail {

// The port of `rank` for link class `cls`, made on first use (a rank has few classes).
int Simulation::port(int rank, int cls) {
  std::vector<Port>& ports = ports_[static_cast<size_t>(rank)];
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].cls == cls) return static_cast<int>(i);
  }
  ports.push_back(Port{cls, {}, {}});
  return static_cast<int>(ports.size() - 1);
}

void Simulation::start_message(TaskRef from, TaskRef to) {
  ++in_flight_[static_cast<size_t>(from.rank)];
  ++in_flight_[static_cast<size_t>(to.rank)];
  // The link is priced between the sender and the receiver it names, which `to` stands for,
  // once: its rate is read at every refresh.
  const int to_rank = task(from).send_peer;
  const int cls = cost_.link_class(from.rank, to_rank);
  const int id = static_cast<int>(flows_.size());
  const LinkRate rate = cost_.link_rate(CollectiveOp::none, task(from).bytes, from.rank, to_rank);
  Flow f;
  f.from = from;
  f.to = to;
  f.bytes_per_second = rate.bytes_per_s;
  f.out_port = port(from.rank, cls);
  f.in_port = port(to.rank, cls);
  f.remaining = static_cast<double>(task(from).bytes);
  flows_.push_back(std::move(f));
  const double latency = rate.latency_s;
  if (latency > 0) {
    push(now_ + latency, EventKind::flow_start, TaskRef{}, id);
  } else {
    begin_flow(id);
  }
}

void Simulation::post_collective(TaskRef ref) {
  const int k = st(ref).collective;
  const size_t n = plans_.size();
  if (++collective_posted_[static_cast<size_t>(k)] < static_cast<int>(n)) return;
  // Every rank has posted it.
  for (size_t r = 0; r < n; ++r) ++in_flight_[r];
  const int id = static_cast<int>(flows_.size());
  Flow f;
  f.collective = k;
  f.remaining = 1;
  // check_collectives made the k-th collective the same op on every rank.
  const CollectiveOp op = task(ref).op;
  f.latencies = cost_.latencies_per_step(task(ref), std::max(task(ref).batch, 1));
  f.reduce_per_byte = cost_.reduction_seconds_per_byte(op, plans_[0].dtype);
  if (f.reduce_per_byte > 0) {
    for (size_t r = 0; r < n; ++r) ++reducing_[r];
  }
  f.steps = collective_schedule(op, world_);
  if (!f.steps.empty()) {
    const int64_t steps = collective_step_count(op, world_);
    f.blocks.resize(n);
    int64_t sent = 0;
    for (size_t r = 0; r < n; ++r) {
      const Task& t = plans_[r].tasks[static_cast<size_t>(collectives_[r][static_cast<size_t>(k)])];
      // Task::bytes counts what this rank sends over all steps.
      f.blocks[r] = static_cast<double>(t.bytes / std::max<int64_t>(steps, 1));
      sent += t.bytes;
      if (t.spans >= 0) add_uneven_blocks(static_cast<int>(r), t, f);
    }
    if (!f.step_blocks.empty()) f.blocks = f.step_blocks.front();
    if (!f.step_copies.empty()) f.copies = f.step_copies.front();
    // nccl-tests' size: world blocks, of which a rank sends world - 1; uneven blocks at their
    // mean.
    f.op = op;
    f.size = f.step_blocks.empty()
                 ? static_cast<int64_t>(f.blocks[0]) * world_
                 : sent / static_cast<int64_t>(n) / std::max<int64_t>(steps, 1) * world_;
    f.links = links_for(f.steps.front().shift, f);
  }
  flows_.push_back(std::move(f));
  begin_flow(id);
}

// Rank r's blocks of an uneven all-to-all, step by step: in step s it sends what its spans
// give rank r + s (the pairwise schedule of collective_steps.h), paying the latencies the cost
// model gives that many spans.
void Simulation::add_uneven_blocks(int r, const Task& t, Flow& f) {
  const Plan& plan = plans_[static_cast<size_t>(r)];
  const std::vector<int64_t> bytes = all_to_all_sent_bytes(plan, t);
  const PeerSpans blocks = all_to_all_blocks(plan, t);
  f.step_blocks.resize(f.steps.size(), std::vector<double>(plans_.size(), 0.0));
  f.step_copies.resize(f.steps.size(), std::vector<int>(plans_.size(), 1));
  f.latencies = 1;
  for (size_t i = 0; i < f.steps.size(); ++i) {
    const size_t to = static_cast<size_t>((r + f.steps[i].shift) % world_);
    f.step_blocks[i][static_cast<size_t>(r)] = static_cast<double>(bytes[to]);
    f.step_copies[i][static_cast<size_t>(r)] =
        cost_.latencies_per_step(t, static_cast<int>(blocks.send[to].size()));
  }
}

// The links of a collective step in which every rank r sends to r + shift, each over the class
// the cost model gives that pair; one per simulated rank, received by the simulated rank that
// stands for r + shift; each pays its latency as many times as the collective's copies.
std::vector<CollectiveLink> Simulation::links_for(int shift, const Flow& f) {
  std::vector<CollectiveLink> links(static_cast<size_t>(held_));
  for (int r = 0; r < held_; ++r) {
    const int to = (r + shift) % world_;
    const int cls = cost_.link_class(r, to);
    CollectiveLink& l = links[static_cast<size_t>(r)];
    l.to = held(to);
    l.out_port = port(r, cls);
    l.in_port = port(l.to, cls);
    const LinkRate rate = cost_.link_rate(f.op, f.size, r, to);
    l.latency = rate.latency_s * f.latencies;
    l.bytes_per_second = rate.bytes_per_s;
  }
  return links;
}

// Collective `id` finished its running entry and another follows: it moves to that entry's
// links and starts it from the beginning. Only when the ports differ (a shift that crosses
// other link classes) is it re-listed, so that over one link class the flows beside it keep
// their shares undisturbed.
void Simulation::next_step(int id) {
  Flow& f = flow(id);
  std::vector<CollectiveLink> next = links_for(f.steps[f.step + 1].shift, f);
  // Every rank sends on one link and receives on one in each step: compare per rank.
  bool same = true;
  std::vector<int> in_before(f.links.size()), in_after(f.links.size());
  for (size_t r = 0; r < f.links.size(); ++r) {
    same = same && f.links[r].out_port == next[r].out_port;
    in_before[static_cast<size_t>(f.links[r].to)] = f.links[r].in_port;
    in_after[static_cast<size_t>(next[r].to)] = next[r].in_port;
  }
  same = same && in_before == in_after;
  if (!same) {
    f.flowing = false;
    unlist(id);
  }
  ++f.step;
  if (!f.step_blocks.empty()) f.blocks = f.step_blocks[f.step];
  if (!f.step_copies.empty()) f.copies = f.step_copies[f.step];
  f.links = std::move(next);
  f.remaining = 1;
  f.scheduled = false;
  if (same) {
    f.since = now_;
    refresh(id);
  } else {
    begin_flow(id);
  }
}

// The flows whose rate may change when `id` starts or stops flowing: those sharing a port
// with it, itself included while it is listed.
template <typename Fn>
void Simulation::for_each_port(int id, Fn&& fn) {
  const Flow& f = flow(id);
  if (f.collective < 0) {
    fn(port_at(f.from.rank, f.out_port).out);
    fn(port_at(f.to.rank, f.in_port).in);
    return;
  }
  for (size_t r = 0; r < f.links.size(); ++r) {
    const CollectiveLink& l = f.links[r];
    fn(port_at(static_cast<int>(r), l.out_port).out);
    fn(port_at(l.to, l.in_port).in);
  }
}

void Simulation::begin_flow(int id) {
  flow(id).flowing = true;
  flow(id).since = now_;
  for_each_port(id, [id](std::vector<int>& list) { list.push_back(id); });
  refresh_neighbours(id);
}

// Takes `id` off its ports and re-rates the flows left there.
void Simulation::unlist(int id) {
  for_each_port(id, [id](std::vector<int>& list) {
    const auto it = std::find(list.begin(), list.end(), id);
    *it = list.back();
    list.pop_back();
  });
  refresh_neighbours(id);
}

// A message arrived, or a collective finished its running entry of steps.
void Simulation::end_flow(int id) {
  Flow& f = flow(id);
  if (f.collective >= 0 && f.step + 1 < f.steps.size()) {
    next_step(id);
    return;
  }
  f.flowing = false;
  unlist(id);
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
    if (f.reduce_per_byte > 0) --reducing_[r];
    finish({static_cast<int>(r), collectives_[r][k]});
  }
}

// Rates after `id` started or stopped flowing: its own (when it flows) and those of the flows
// on its ports (refreshing changes neither the lists nor the flow vector). A flow on two of
// these ports is refreshed twice; the second finds its rate unchanged.
void Simulation::refresh_neighbours(int id) {
  if (flow(id).flowing) refresh(id);
  for_each_port(id, [this, id](const std::vector<int>& list) {
    for (int other : list) {
      if (other != id) refresh(other);
    }
  });
}

size_t Simulation::share(int rank_out, int out_port, int rank_in, int in_port) {
  return std::max(port_at(rank_out, out_port).out.size(), port_at(rank_in, in_port).in.size());
}

// What one step of collective `f`'s running entry takes at the current shares: each step
// waits for the slowest link's block at that link's share. A receiver's reduction of a block
// (transport ce) runs while the next block arrives, so a step takes the longer of the two, and
// the last block's reduction comes after the last step: spread over the steps, so that a
// collective cut into entries prices it once.
double Simulation::collective_step_seconds(const Flow& f) {
  int steps = 0;
  for (const CollectiveStep& entry : f.steps) steps += entry.repeat;
  double step = 0;
  for (size_t r = 0; r < f.links.size(); ++r) {
    const CollectiveLink& l = f.links[r];
    const int from = static_cast<int>(r);
    // A link with nothing to send this step (an uneven all-to-all's empty pair) is idle.
    if (f.blocks[r] <= 0) continue;
    const size_t s = share(from, l.out_port, l.to, l.in_port);
    double seconds = f.blocks[r] * static_cast<double>(s) / l.bytes_per_second;
    if (computing(from) || computing(l.to)) seconds *= transfer_slowdown_;
    const double reduce = f.blocks[r] * f.reduce_per_byte;  // 0 where none is priced
    const double latency = f.copies.empty() ? l.latency : l.latency * f.copies[r];
    step = std::max(step, latency + std::max(seconds, reduce) + reduce / std::max(steps, 1));
  }
  return step;
}

// Brings a flowing flow's progress up to now under its old rate and reschedules its end under
// the current shares, when they changed it.
void Simulation::refresh(int id) {
  Flow& f = flow(id);
  double rate = 0, period = 0;
  if (f.collective < 0) {
    const double bw = f.bytes_per_second;
    const size_t s = share(f.from.rank, f.out_port, f.to.rank, f.in_port);
    rate = s == 1 ? bw : bw / static_cast<double>(s);
    if (computing(f.from.rank) || computing(f.to.rank)) rate /= transfer_slowdown_;
    if (f.scheduled && rate == f.rate) return;
  } else {
    const double step = collective_step_seconds(f);
    period = f.steps.empty() ? 0.0 : step * f.steps[f.step].repeat;
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

}  // namespace fob::sim_detail
