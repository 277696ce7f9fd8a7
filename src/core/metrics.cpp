// The metrics of docs/DESIGN.md section 3.
//
// Conventions used throughout:
//  - A step's time is the slowest rank's (CaseResult::step), as IMB does.
//  - median: the mean of the two middle values for an even count.
//  - p90 / p99: linear interpolation between closest ranks (numpy's default "linear" method),
//    so p at position p * (n - 1) of the sorted values.
//  - cv: sample standard deviation (n - 1 denominator) over the mean; 0 for a single iteration.
//  - A needed reference case that is absent, or a zero denominator, gives a quiet NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fob/metrics.h"

#include "fob/hardware.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "fob/trust.h"

namespace fob {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NaN in, NaN out; and a zero denominator is "undefined", not infinity.
double ratio(double num, double den) {
  if (std::isnan(num) || std::isnan(den) || den == 0) return kNaN;
  return num / den;
}

bool any_nan(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
}

// Median over iterations of the slowest rank's compute-stream busy time (sum of its compute
// tasks' durations): what the strategy's own GEMM slicing costs with communication removed.
double compute_busy_median(const CaseResult& c) {
  if (c.world <= 0 || c.iters <= 0 || c.max_tasks <= 0 || !c.arrays_match()) return kNaN;
  const int8_t compute = static_cast<int8_t>(StreamId::compute);
  std::vector<double> per_iter;
  for (int i = 0; i < c.iters; ++i) {
    double slowest = 0;
    for (int r = 0; r < c.ranks(); ++r) {  // ranks not stored ran as stored ones did
      double busy = 0;
      for (int t = 0; t < c.max_tasks; ++t) {
        const TaskRecord& task = c.task_record(r, t);
        if (task.task < 0 || task.stream != compute) continue;
        const double d = c.end(i, r, t) - c.start(i, r, t);
        if (!std::isnan(d)) busy += d;
      }
      slowest = std::max(slowest, busy);
    }
    per_iter.push_back(slowest);
  }
  return median(std::move(per_iter));
}

using Intervals = std::vector<std::pair<double, double>>;

// Sorted, disjoint intervals covering the same time as `v`: the busy time of a stream whose
// tasks may overlap (a backend that runs several transfers at once) is counted once.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [a, b] : v) {
    if (!out.empty() && a <= out.back().second) {
      out.back().second = std::max(out.back().second, b);
    } else {
      out.emplace_back(a, b);
    }
  }
  return out;
}

double total_length(const Intervals& v) {
  double sum = 0;
  for (const auto& [a, b] : v) sum += b - a;
  return sum;
}

// Length of the intersection of two merged interval lists (a two-pointer sweep).
double intersection_length(const Intervals& x, const Intervals& y) {
  double sum = 0;
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    sum += std::max(0.0, std::min(x[i].second, y[j].second) - std::max(x[i].first, y[j].first));
    if (x[i].second < y[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return sum;
}

// The most flops any one rank performs per step.
double max_rank_flops(const CaseResult& c) {
  if (c.world <= 0 || c.max_tasks <= 0 || !c.arrays_match()) return kNaN;
  double best = 0;
  for (int r = 0; r < c.ranks(); ++r) {  // ranks not stored ran as stored ones did
    double sum = 0;
    for (int t = 0; t < c.max_tasks; ++t) {
      const TaskRecord& task = c.task_record(r, t);
      if (task.task >= 0) sum += task.flops;
    }
    best = std::max(best, sum);
  }
  return best;
}

bool is_transfer_kind(int8_t kind) {
  switch (static_cast<TaskKind>(kind)) {
    case TaskKind::send:
    case TaskKind::recv:
    case TaskKind::exchange:
    case TaskKind::collective:
      return true;
    default:
      return false;
  }
}

// Bytes rank 0 sends over the whole step (TaskRecord::bytes counts sent bytes only).
double rank0_sent_bytes(const CaseResult& c) {
  if (c.world <= 0 || c.max_tasks <= 0 || !c.arrays_match()) return kNaN;
  double sum = 0;
  for (int t = 0; t < c.max_tasks; ++t) {
    const TaskRecord& task = c.tasks[static_cast<size_t>(t)];
    if (task.task >= 0 && is_transfer_kind(task.kind)) sum += static_cast<double>(task.bytes);
  }
  return sum;
}

}  // namespace

double measured_concurrency(const CaseResult& c) {
  if (c.world <= 0 || c.iters <= 0 || c.max_tasks <= 0 || !c.arrays_match()) return kNaN;
  const int8_t compute = static_cast<int8_t>(StreamId::compute);
  const int8_t comm = static_cast<int8_t>(StreamId::comm);
  std::vector<double> per_iter;
  const int stored = c.ranks();
  std::vector<double> rank_both(static_cast<size_t>(stored)), rank_busy(rank_both.size());
  for (int i = 0; i < c.iters; ++i) {
    for (int r = 0; r < stored; ++r) {
      Intervals on_compute, on_comm;
      for (int t = 0; t < c.max_tasks; ++t) {
        const TaskRecord& task = c.task_record(r, t);
        if (task.task < 0 || (task.stream != compute && task.stream != comm)) continue;
        const double a = c.start(i, r, t), b = c.end(i, r, t);
        if (std::isnan(a) || std::isnan(b) || b <= a) continue;
        (task.stream == comm ? on_comm : on_compute).emplace_back(a, b);
      }
      const Intervals comm_union = merged(std::move(on_comm));
      rank_busy[static_cast<size_t>(r)] = total_length(comm_union);
      rank_both[static_cast<size_t>(r)] =
          intersection_length(merged(std::move(on_compute)), comm_union);
    }
    // Summed over every rank in rank order, those not stored as the stored ones they ran as:
    // the same sums, to the bit, as over a case that stores them all.
    double both = 0, comm_busy = 0;
    for (int r = 0; r < c.world; ++r) {
      comm_busy += rank_busy[static_cast<size_t>(r % stored)];
      both += rank_both[static_cast<size_t>(r % stored)];
    }
    // An iteration without comm busy time has no concurrency to measure; it is left out
    // rather than counted as 0, so that a case's value describes its communication.
    if (comm_busy > 0) per_iter.push_back(both / comm_busy);
  }
  return median(std::move(per_iter));
}

// The strategy prices its transfers (Strategy::collective_bytes, busbw_factor); one without a
// price, or a single rank, has no bus bandwidth.
namespace {

double algbw_of(const CaseKey& c, double sent_bytes, double seconds) {
  const Strategy* s = c.definition();
  if (!s || !s->collective_bytes || c.world <= 1) return kNaN;
  return ratio(s->collective_bytes(sent_bytes, c.world), seconds) / 1e9;
}

double busbw_of(const CaseKey& c, double sent_bytes, double seconds) {
  const Strategy* s = c.definition();
  if (!s || !s->busbw_factor || c.world <= 1) return kNaN;
  return algbw_of(c, sent_bytes, seconds) * s->busbw_factor(c.world);
}

}  // namespace

double case_busbw(const CaseResult& c, double seconds) {
  return busbw_of(c, rank0_sent_bytes(c), seconds);
}

double percentile(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  const double a = sorted[lo], b = sorted[hi];
  if (frac == 0 || a == b) return a;
  if (!std::isfinite(a) || !std::isfinite(b)) return frac < 0.5 ? a : b;
  return a + frac * (b - a);
}

std::vector<double> step_times(const CaseResult& c) {
  std::vector<double> steps;
  if (c.ranks() <= 0 ||
      c.step_seconds.size() < static_cast<size_t>(c.iters) * static_cast<size_t>(c.ranks())) {
    return steps;
  }
  for (int i = 0; i < c.iters; ++i) steps.push_back(c.step(i));
  return steps;
}

double median_step(const CaseResult& c) {
  std::vector<double> steps = step_times(c);
  return any_nan(steps) ? kNaN : median(std::move(steps));
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

CaseStats case_stats(const CaseResult& c) {
  CaseStats st;
  std::vector<double> steps = step_times(c);
  if (steps.empty() || any_nan(steps)) {
    st.t_median = st.t_min = st.t_p90 = st.t_p99 = st.t_cv = kNaN;
    st.t_ci_low = st.t_ci_high = kNaN;
  } else {
    std::sort(steps.begin(), steps.end());
    const double n = static_cast<double>(steps.size());
    st.t_median = median(steps);
    st.t_min = steps.front();
    st.t_p90 = percentile(steps, 0.90);
    st.t_p99 = percentile(steps, 0.99);
    median_interval(steps, &st.t_ci_low, &st.t_ci_high);
    const double mean = std::accumulate(steps.begin(), steps.end(), 0.0) / n;
    double ss = 0;
    for (double x : steps) ss += (x - mean) * (x - mean);
    st.t_cv = steps.size() > 1 ? ratio(std::sqrt(ss / (n - 1)), mean) : 0.0;
  }
  st.compute_busy = compute_busy_median(c);
  st.rank_flops = max_rank_flops(c);
  st.concurrency = measured_concurrency(c);
  st.sent_bytes = rank0_sent_bytes(c);
  st.hardware_doubt = throttle_doubt(c);
  return st;
}

std::vector<Summary> summarize(const ResultFile& file) {
  return file.stats.size() == file.cases.size() ? summarize(file.cases, file.stats)
                                                : summarize(file.cases);
}

std::vector<Summary> summarize(const std::vector<CaseResult>& cases) {
  std::vector<CaseStats> stats;
  stats.reserve(cases.size());
  for (const CaseResult& c : cases) stats.push_back(case_stats(c));
  return summarize(cases, stats);
}

std::vector<Summary> summarize(const std::vector<CaseResult>& cases,
                               const std::vector<CaseStats>& stats) {
  if (stats.size() != cases.size()) throw std::logic_error("summarize: one CaseStats per case");
  // First case of each reference strategy per shape wins; a sweep runs each reference once.
  std::map<CaseKey, double> reference, reference_busy;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].role() != StrategyRole::overlapping) {
      reference.emplace(cases[i].key(), stats[i].t_median);
      reference_busy.emplace(cases[i].key(), stats[i].compute_busy);
    }
  }
  // compute_only's own compute-stream busy time: what a case's busy time is compared with (its
  // step time T_comp also holds the iteration's start and the gaps between tasks).
  auto comp_busy = [&](const CaseResult& c) {
    auto it =
        reference_busy.find(c.key().with_strategy(role_name(StrategyRole::compute_reference)));
    return it == reference_busy.end() ? kNaN : it->second;
  };
  auto ref = [&](const CaseResult& c, const char* strategy) {
    auto it = reference.find(c.key().with_strategy(strategy));
    return it == reference.end() ? kNaN : it->second;
  };

  std::vector<Summary> out;
  out.reserve(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseResult& c = cases[i];
    const CaseStats& st = stats[i];
    Summary s;
    static_cast<CaseKey&>(s) = c.key();
    s.case_id = c.id;
    s.iters = c.iters;
    s.verified = c.verified;
    s.t_median = st.t_median;
    s.t_min = st.t_min;
    s.t_p90 = st.t_p90;
    s.t_p99 = st.t_p99;
    s.t_cv = st.t_cv;
    s.t_ci_low = st.t_ci_low;
    s.t_ci_high = st.t_ci_high;
    s.doubts = st.hardware_doubt;

    const double t = s.t_median;
    const double t_base = ref(c, role_name(StrategyRole::serial_baseline));
    s.t_comp = ref(c, role_name(StrategyRole::compute_reference));
    s.t_comm = ref(c, role_name(StrategyRole::comm_reference));
    s.t_lb = (std::isnan(s.t_comp) || std::isnan(s.t_comm)) ? kNaN : std::max(s.t_comp, s.t_comm);

    const bool is_compute_only = c.has_role(StrategyRole::compute_reference);
    const bool is_comm_only = c.has_role(StrategyRole::comm_reference);
    if (is_compute_only || is_comm_only) {
      // The references measure the bounds; overlap metrics of a bound against itself mean
      // nothing, so only what describes the case itself is filled in.
      s.exposed_comm = is_compute_only ? 0.0 : kNaN;
      s.speedup = s.ideal_speedup = s.comm_reduction = s.e2e_reduction = kNaN;
      s.overlap_efficiency = s.hidden_frac = s.overlap_pct = kNaN;
    } else {
      const double exposed_base = t_base - s.t_comp;
      s.exposed_comm = t - s.t_comp;
      s.speedup = ratio(t_base, t);
      s.ideal_speedup = ratio(t_base, s.t_lb);
      s.comm_reduction = 1.0 - ratio(s.exposed_comm, exposed_base);
      s.e2e_reduction = 1.0 - ratio(t, t_base);
      s.overlap_efficiency = ratio(t_base - t, t_base - s.t_lb);
      s.hidden_frac = 1.0 - ratio(s.exposed_comm, s.t_comm);
      const double pct = ratio(s.t_comm + s.t_comp - t, std::min(s.t_comm, s.t_comp));
      s.overlap_pct = std::isnan(pct) ? kNaN : 100.0 * std::clamp(pct, 0.0, 1.0);
    }

    s.slicing_penalty = is_comm_only ? kNaN : st.compute_busy - comp_busy(c);
    s.tflops = is_comm_only ? kNaN : ratio(st.rank_flops, t) / 1e12;

    s.algbw = algbw_of(c, st.sent_bytes, t);
    s.busbw = busbw_of(c, st.sent_bytes, t);
    s.concurrency = st.concurrency;
    out.push_back(std::move(s));
  }
  assess_trust(out);
  return out;
}

}  // namespace fob
