// Collecting calibrate's samples from measured cases (calibrate_samples.h).
#include "calibrate_samples.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collective_steps.h"
#include "fob/device_plan.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob::calib {

// Regenerates the case's plans; an empty string when they match the recorded tasks, else why
// not.
std::string regenerate(CaseView& v) {
  const CaseResult& c = *v.c;
  v.plans.clear();
  // Before any plan is made: a file's claimed world does not make plans its records cannot hold.
  if (c.ranks() < c.world) {
    return "it holds " + std::to_string(c.ranks()) + " of its " + std::to_string(c.world) +
           " ranks (a simulated ring, stored_ranks), not a measurement of each";
  }
  try {
    const CaseSpec spec = c.spec();
    v.dtype = spec.dtype;
    v.strategy = spec.strategy.strategy;
    // Rank by rank, each held to the tasks the file recorded for it, so that the plans take
    // memory in proportion to the file's tasks table, not to what its fields claim.
    v.plans.reserve(static_cast<size_t>(c.world));
    size_t tasks = 0;
    for (int r = 0; r < c.world; ++r) {
      v.plans.push_back(make_plan(spec, r));
      tasks += v.plans.back().tasks.size();
      if (static_cast<int32_t>(v.plans.back().tasks.size()) > c.max_tasks ||
          tasks > c.tasks.size()) {
        v.plans.clear();
        return "rank " + std::to_string(r) + " has more tasks now than recorded";
      }
    }
  } catch (const std::exception& e) {
    v.plans.clear();
    return e.what();
  }
  for (int r = 0; r < c.world; ++r) {
    for (const Task& t : v.plans[static_cast<size_t>(r)].tasks) {
      const size_t i = c.task_index(r, t.id);
      if (i >= c.tasks.size()) return "the tasks table is short";
      const TaskRecord& rec = c.tasks[i];
      if (rec.task != t.id || rec.kind != static_cast<int8_t>(t.kind) || rec.bytes != t.bytes ||
          rec.flops != t.flops) {
        return "rank " + std::to_string(r) + " task " + std::to_string(t.id) +
               " differs from the recorded one (the plans changed since the run)";
      }
    }
  }
  return "";
}

namespace {

// The parts of `intervals` inside `window`, merged.
std::vector<Interval> clip_merge(std::vector<Interval> intervals, const Interval& window) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& x : intervals) {
    const Interval c{std::max(x.start, window.start), std::min(x.end, window.end)};
    if (c.end <= c.start) continue;
    if (!out.empty() && c.start <= out.back().end) {
      out.back().end = std::max(out.back().end, c.end);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

double covered(const std::vector<Interval>& busy, double from, double to) {
  double sum = 0;
  for (const Interval& x : busy)
    sum += std::max(0.0, std::min(x.end, to) - std::max(x.start, from));
  return sum;
}

namespace {

// How compute and transfers got in each other's way in an overlapping strategy's case: the
// transfers' windows with the compute inside them, and the waits of transfers that became
// ready while their rank computed. A task is ready when its stream's previous task and its
// deps have ended; a rank's first task of a stream without deps has no known ready time.
class InterferenceCollector {
 public:
  InterferenceCollector(const CaseView& v, bool overlaps, Collected& out)
      : v_(v), overlaps_(overlaps), out_(out), world_(static_cast<size_t>(v.c->world)) {
    link_previous();
    match_halves();
    colls_ = v.collectives();
  }

  void collect() {
    for (int it = 0; it < v_.iters(); ++it) {
      time_iteration(it);
      for (size_t r = 0; r < world_; ++r) {
        size_t collective = 0;  // the rank's collectives so far
        for (const Task& t : v_.plans[r].tasks) {
          if (t.kind == TaskKind::collective) ++collective;
          sample_task(r, t, collective);
        }
      }
    }
  }

 private:
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  // Per rank and task: the same stream's previous task.
  void link_previous() {
    previous_.resize(world_);
    for (size_t r = 0; r < world_; ++r) {
      int last[kNumStreams] = {-1, -1};
      for (const Task& t : v_.plans[r].tasks) {
        previous_[r].push_back(last[static_cast<size_t>(t.stream)]);
        last[static_cast<size_t>(t.stream)] = t.id;
      }
    }
  }

  // Message halves matched as the simulator matches them: the k-th send from a to b with a tag
  // meets the k-th receive on b from a with that tag.
  void match_halves() {
    std::map<std::tuple<int, int, int>, std::vector<int>> sends, recvs;  // -> task ids in order
    halves_.resize(world_);
    for (size_t r = 0; r < world_; ++r) {
      halves_[r].resize(v_.plans[r].tasks.size());
      const int rank = static_cast<int>(r);
      for (const Task& t : v_.plans[r].tasks) {
        if (t.sends()) sends[{rank, t.send_peer, t.tag}].push_back(t.id);
        if (t.receives()) recvs[{t.recv_peer, rank, t.tag}].push_back(t.id);
      }
    }
    for (const auto& [key, ids] : sends) {
      const auto& [from, to, tag] = key;
      const auto it = recvs.find(key);
      if (it == recvs.end()) continue;
      for (size_t i = 0; i < std::min(ids.size(), it->second.size()); ++i) {
        halves_[static_cast<size_t>(from)][static_cast<size_t>(ids[i])].emplace_back(to,
                                                                                     it->second[i]);
        halves_[static_cast<size_t>(to)][static_cast<size_t>(it->second[i])].emplace_back(from,
                                                                                          ids[i]);
      }
    }
  }

  // One iteration's task intervals (NaN when untimed) and each rank's compute intervals.
  void time_iteration(int it) {
    at_.assign(world_, {});
    computing_.assign(world_, {});
    for (size_t r = 0; r < world_; ++r) {
      for (const Task& t : v_.plans[r].tasks) {
        Interval iv{kNaN, kNaN};
        if (v_.timed(it, static_cast<int>(r), t.id, &iv) && t.stream == StreamId::compute) {
          computing_[r].push_back(iv);
        }
        at_[r].push_back(iv);
      }
    }
  }

  // NaN when one of them was not timed: std::max would drop a NaN second operand.
  double latest_end(double when, size_t r, int task) const {
    const double end = at_[r][static_cast<size_t>(task)].end;
    return std::isnan(end) ? kNaN : std::max(when, end);
  }

  double ready(size_t r, const Task& t) const {
    double when = -INFINITY;
    const int prev = previous_[r][static_cast<size_t>(t.id)];
    if (prev < 0 && t.deps.empty()) return kNaN;
    if (prev >= 0) when = latest_end(when, r, prev);
    for (int d : t.deps) when = latest_end(when, r, d);
    return when;
  }

  // Whether a compute task was running when a transfer became ready at `when`, or starting
  // then: the first one that ends later, if it was ready by then (its delay noted).
  bool under_compute(size_t r, double when, double wait) {
    for (const Task& ct : v_.plans[r].tasks) {
      if (ct.stream != StreamId::compute) continue;
      const Interval& ci = at_[r][static_cast<size_t>(ct.id)];
      if (!std::isfinite(ci.end) || ci.end <= when) continue;
      const double ct_ready = ready(r, ct);
      if (!(std::isnan(ct_ready) ? ci.start <= when : ct_ready <= when)) return false;
      if (overlaps_) out_.delays.push_back({wait, ci.end - when});
      return true;
    }
    return false;
  }

  // The k-th collective's window: from the last rank's start to the first rank's end, with
  // its largest per-step block; NaN where a rank lacks it or did not time it.
  void collective_window(size_t k, const Task& t, double start, double end, TransferSample& sample,
                         std::vector<size_t>& involved) const {
    sample.collective = true;
    sample.op = t.op;
    sample.world = v_.c->world;
    sample.steps = sim_detail::collective_step_count(t.op, v_.c->world);
    std::vector<const Plan*> plans;
    std::vector<const Task*> tasks;
    for (size_t q = 0; q < world_; ++q) {
      if (k >= colls_[q].size()) {  // no k-th collective there: no window to measure
        end = kNaN;
        break;
      }
      const Interval& theirs = at_[q][static_cast<size_t>(colls_[q][k])];
      if (!std::isfinite(theirs.start) || !std::isfinite(theirs.end)) end = kNaN;
      start = std::max(start, theirs.start);
      end = std::min(end, theirs.end);
      plans.push_back(&v_.plans[q]);
      tasks.push_back(&v_.task(static_cast<int>(q), colls_[q][k]));
      involved.push_back(q);
    }
    sample.bytes = static_cast<double>(sim_detail::priced_block(plans, tasks, sample.steps));
    sample.window = {start, end};
  }

  // A point-to-point transfer's window: from the last of its halves' posts to its end.
  void exchange_window(size_t r, const Task& t, TransferSample& sample,
                       std::vector<size_t>& involved) const {
    const Interval& mine = at_[r][static_cast<size_t>(t.id)];
    double start = mine.start;
    int64_t bytes = t.bytes;
    for (const auto& [q, id] : halves_[r][static_cast<size_t>(t.id)]) {
      const double theirs = at_[static_cast<size_t>(q)][static_cast<size_t>(id)].start;
      start = std::isnan(theirs) ? kNaN : std::max(start, theirs);
      bytes = std::max(bytes, v_.task(q, id).bytes);
      involved.push_back(static_cast<size_t>(q));
    }
    sample.bytes = static_cast<double>(bytes);
    sample.window = {start, mine.end};
  }

  // A task's launch wait, and for an overlapping strategy's transfer its window with the
  // compute of every rank involved inside it.
  void sample_task(size_t r, const Task& t, size_t collective) {
    const Interval& mine = at_[r][static_cast<size_t>(t.id)];
    const double when = ready(r, t);
    if (!std::isfinite(mine.start) || !std::isfinite(when)) return;
    const double wait = std::max(0.0, mine.start - when);
    if (t.stream == StreamId::compute) {
      out_.launch[static_cast<size_t>(StreamId::compute)].push_back(wait);
      return;
    }
    if (!under_compute(r, when, wait)) {
      out_.launch[static_cast<size_t>(StreamId::comm)].push_back(wait);
    }
    if (!overlaps_) return;
    TransferSample sample;
    std::vector<size_t> involved{r};
    if (t.kind == TaskKind::collective) {
      collective_window(collective - 1, t, mine.start, mine.end, sample, involved);
    } else {
      exchange_window(r, t, sample, involved);
    }
    if (!std::isfinite(sample.window.start) || !std::isfinite(sample.window.end) ||
        sample.window.end <= sample.window.start || sample.bytes <= 0) {
      return;
    }
    std::vector<Interval> busy;
    for (size_t q : involved) busy.insert(busy.end(), computing_[q].begin(), computing_[q].end());
    sample.busy = clip_merge(std::move(busy), sample.window);
    out_.transfers.push_back(std::move(sample));
  }

  const CaseView& v_;
  bool overlaps_;
  Collected& out_;
  size_t world_;
  std::vector<std::vector<int>> previous_;
  std::vector<std::vector<std::vector<std::pair<int, int>>>> halves_;  // per rank, task: peers
  std::vector<std::vector<int>> colls_;           // per rank: its collectives' task ids in order
  std::vector<std::vector<Interval>> at_;         // per rank and task, this iteration
  std::vector<std::vector<Interval>> computing_;  // per rank, this iteration
};

// The GEMMs' and element-wise tasks' durations: a reference case's, and the others' that no
// transfer touched; and GEMMs of overlapping strategies that started under a transfer. A step
// lasts as long as its slowest rank, so a GEMM's sample for an iteration is its slowest rank's
// time among the ranks whose task of that id has its shape: the simulator gives every such rank
// that time, and its step then matches the measured median of slowest-rank steps rather than a
// typical rank's. Ranks whose task differs in shape (an expert's tokens under moe) are samples
// of their own shapes.
class ComputeCollector {
 public:
  ComputeCollector(const CaseView& v, bool reference, bool overlaps, Collected& out)
      : v_(v), reference_(reference), overlaps_(overlaps), out_(out) {
    // The cuda backend runs these GEMMs on the SMs NCCL leaves, transfer or not.
    if (!overlaps_ || v_.file->system.backend != "cuda") return;
    for (const Plan& plan : v_.plans) beside_.push_back(tasks_beside_transfers(plan));
  }

  void collect() {
    for (int it = 0; it < v_.iters(); ++it) {
      for (int r = 0; r < v_.c->world; ++r) {
        const Plan& plan = v_.plans[static_cast<size_t>(r)];
        std::vector<Interval> comm;  // the rank's comm-stream intervals this iteration
        for (const Task& t : plan.tasks) {
          Interval iv;
          if (t.stream == StreamId::comm && v_.timed(it, r, t.id, &iv)) comm.push_back(iv);
        }
        for (const Task& t : plan.tasks) sample(it, r, t, comm);
      }
    }
    for (const auto& [where, d] : slowest_gemm_)
      out_.gemm.reference[std::get<2>(where)].push_back(d);
    for (const auto& [where, d] : slowest_clean_gemm_) {
      out_.gemm.clean[std::get<2>(where)].push_back(d);
    }
    for (const auto& [where, d] : slowest_elem_)
      out_.elem.reference[std::get<2>(where)].push_back(d);
  }

 private:
  template <typename Key>
  using Slowest = std::map<std::tuple<int, int, Key>, double>;  // (iter, task, shape)

  template <typename Key>
  static void keep_slowest(Slowest<Key>& slowest, int it, int task, const Key& key, double d) {
    auto [entry, inserted] = slowest.try_emplace({it, task, key}, d);
    if (!inserted) entry->second = std::max(entry->second, d);
  }

  // How a compute task's interval meets the rank's comm-stream intervals.
  struct CommOverlap {
    bool touched = false;        // any overlap at all
    bool started_under = false;  // the task began while a transfer ran
  };

  static CommOverlap overlap_with(const Interval& iv, const std::vector<Interval>& comm) {
    CommOverlap o;
    for (const Interval& x : comm) {
      o.touched = o.touched || (x.start < iv.end && x.end > iv.start);
      o.started_under = o.started_under || (x.start <= iv.start && iv.start < x.end);
    }
    return o;
  }

  void sample(int it, int r, const Task& t, const std::vector<Interval>& comm) {
    if (t.stream != StreamId::compute) return;
    if (t.kind != TaskKind::gemm && !is_elementwise(t.kind)) return;
    Interval iv;
    if (!v_.timed(it, r, t.id, &iv)) return;
    const double d = iv.end - iv.start;
    const CommOverlap o = overlap_with(iv, comm);
    if (t.kind == TaskKind::gemm) {
      sample_gemm(it, r, t, d, o);
    } else if (!o.touched) {
      sample_elem(it, t, d);
    }
  }

  void sample_gemm(int it, int r, const Task& t, double d, const CommOverlap& o) {
    const auto& beside = beside_.empty() ? std::vector<char>() : beside_[static_cast<size_t>(r)];
    const bool reduced =
        static_cast<size_t>(t.id) < beside.size() && beside[static_cast<size_t>(t.id)] != 0;
    const GemmKey key{v_.dtype, t.m, t.n, t.k, t.batch, reduced};
    if (!o.touched) {
      keep_slowest(reference_ ? slowest_gemm_ : slowest_clean_gemm_, it, t.id, key, d);
      (reference_ ? out_.gemm_any_rank.reference : out_.gemm_any_rank.clean)[key].push_back(d);
    } else if (reduced) {
      out_.beside_touched.emplace_back(key, d);
    }
    if (overlaps_ && o.started_under) out_.contended.emplace_back(key, d);
  }

  void sample_elem(int it, const Task& t, double d) {
    const ElemKey key{v_.dtype, t.kind, t.m, t.n, t.k, t.accumulate};
    if (reference_) {
      keep_slowest(slowest_elem_, it, t.id, key, d);
    } else {
      out_.elem.clean[key].push_back(d);
    }
  }

  const CaseView& v_;
  bool reference_, overlaps_;
  Collected& out_;
  Slowest<GemmKey> slowest_gemm_, slowest_clean_gemm_;
  Slowest<ElemKey> slowest_elem_;
  std::vector<std::vector<char>> beside_;  // per rank and task: on the SMs NCCL leaves
};

void collect_collectives(const CaseView& v, StrategyRole role, Collected& out) {
  const CaseResult& c = *v.c;
  const int iters = v.iters();
  // Collectives, matched across ranks by their order: a collective ends together on every
  // rank, so the rank that posted last (the shortest duration) saw the collective's own time.
  // It is read as the simulator prices it (collective_steps.h): N-1 steps of the largest
  // block, Task::bytes / (N-1) (a ring's steps, or a pairwise all-to-all's), each step
  // latency + block / bandwidth. Its iterations give one time by the link fit's own criterion
  // (relative_location), which iterations that waited for the scheduler hardly move.
  if (role != StrategyRole::comm_reference && role != StrategyRole::serial_baseline) return;
  const std::vector<std::vector<int>> colls = v.collectives();
  for (size_t k = 0; k < colls[0].size(); ++k) {
    const CollectiveOp op = v.task(0, colls[0][k]).op;
    const int steps = sim_detail::collective_step_count(op, c.world);
    std::vector<const Plan*> plans;
    std::vector<const Task*> tasks;
    for (int r = 0; r < c.world; ++r) {
      const auto& mine = colls[static_cast<size_t>(r)];
      if (k >= mine.size()) break;
      plans.push_back(&v.plans[static_cast<size_t>(r)]);
      tasks.push_back(&v.task(r, mine[k]));
    }
    const int64_t block = sim_detail::priced_block(plans, tasks, steps);
    if (static_cast<int>(tasks.size()) < c.world || block <= 0) continue;
    std::vector<double> per_iter;
    for (int it = 0; it < iters; ++it) {
      double shortest = INFINITY;
      for (int r = 0; r < c.world; ++r) {
        Interval iv;
        if (v.timed(it, r, colls[static_cast<size_t>(r)][k], &iv)) {
          shortest = std::min(shortest, iv.end - iv.start);
        }
      }
      if (std::isfinite(shortest)) per_iter.push_back(shortest);
    }
    if (per_iter.empty()) continue;
    const LinkPoint p{static_cast<double>(block), relative_location(per_iter) / steps, op, c.world};
    (role == StrategyRole::comm_reference ? out.comm_only : out.baseline).push_back(p);
  }
}

void collect_exchanges(const CaseView& v, Collected& out) {
  const CaseResult& c = *v.c;
  const int iters = v.iters();
  // Exchanges of strategies without the baseline's collectives: the minimum over iterations
  // and ranks, the instance least likely to include waiting for the peer.
  for (const Task& t0 : v.plans[0].tasks) {
    if (t0.kind != TaskKind::exchange) continue;
    double shortest = INFINITY;
    int64_t bytes = 0;
    for (int r = 0; r < c.world; ++r) {
      const Plan& p = v.plans[static_cast<size_t>(r)];
      if (static_cast<size_t>(t0.id) >= p.tasks.size()) continue;
      const Task& t = p.tasks[static_cast<size_t>(t0.id)];
      if (t.kind != TaskKind::exchange) continue;
      bytes = std::max(bytes, t.bytes);
      for (int it = 0; it < iters; ++it) {
        Interval iv;
        if (v.timed(it, r, t.id, &iv)) shortest = std::min(shortest, iv.end - iv.start);
      }
    }
    if (bytes > 0 && std::isfinite(shortest)) {
      out.exchange.push_back({static_cast<double>(bytes), shortest});
    }
  }
}

}  // namespace

void collect_case(const CaseView& v, Collected& out) {
  // A case whose plans did not regenerate has no strategy: it overlaps nothing known.
  const StrategyRole role = v.strategy ? v.strategy->role : StrategyRole::overlapping;
  const bool overlaps = v.strategy && role == StrategyRole::overlapping;
  ComputeCollector(v, role == StrategyRole::compute_reference, overlaps, out).collect();
  if (v.c->world < 2 || v.iters() == 0) return;
  InterferenceCollector(v, overlaps, out).collect();
  collect_collectives(v, role, out);
  if (role == StrategyRole::overlapping) collect_exchanges(v, out);
}

}  // namespace fob::calib
