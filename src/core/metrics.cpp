// The metrics of docs/metrics.md.
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
#include "fob/rank_stats.h"
#include "fob/speed_probe.h"
#include "fob/strategy.h"
#include "fob/trust.h"
#include "fob/workload.h"

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
  return task_kind_info(kind).transfer;
}

// Bytes rank `r` sends over the whole step (TaskRecord::bytes counts sent bytes only).
double rank_sent_bytes(const CaseResult& c, int r) {
  double sum = 0;
  for (int t = 0; t < c.max_tasks; ++t) {
    const TaskRecord& task = c.task_record(r, t);
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

// The row's per-rank figures, and its straggler named in its doubts.
void set_rank_spread(Summary& s, const RankSpread& r) {
  s.rank_t_min = r.t_min;
  s.rank_t_avg = r.t_avg;
  s.rank_t_max = r.t_max;
  s.slowest_rank = r.slowest_rank;
  s.rank_tflops_min = r.gemm_min / 1e12;
  s.rank_tflops_avg = r.gemm_avg / 1e12;
  s.rank_tflops_max = r.gemm_max / 1e12;
  s.slowest_gemm_rank = r.slowest_gemm_rank;
  for (const std::string& doubt : {straggler_doubt(r), hot_expert_doubt(r)}) {
    if (!doubt.empty()) s.doubts += (s.doubts.empty() ? "" : "; ") + doubt;
  }
}

}  // namespace

double step_sent_bytes(const CaseResult& c) {
  if (c.world <= 0 || c.max_tasks <= 0 || !c.arrays_match()) return kNaN;
  // Every rank of an even collective sends what rank 0 does.
  if (!has_experts(c.workload)) return rank_sent_bytes(c, 0);
  // Routed tokens make the all-to-alls uneven: the busiest rank's transfers bound the step.
  // The combine returns each rank the rows it received in the dispatch, so over the step a
  // rank sends as much as it receives, and its sent bytes are its link's load either way.
  double busiest = 0;
  for (int r = 0; r < c.ranks(); ++r) busiest = std::max(busiest, rank_sent_bytes(c, r));
  return busiest;
}

double case_busbw(const CaseResult& c, double seconds) {
  return busbw_of(c, step_sent_bytes(c), seconds);
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

namespace {

// Each round's median step of `steps` (in iteration order), and which rounds ran in a slow
// phase (CaseStats); both empty where the rounds do not add up to the steps.
void set_rounds(const CaseResult& c, const std::vector<double>& steps, CaseStats& st) {
  const std::vector<int32_t> sizes = c.rounds();
  size_t total = 0;
  for (const int32_t n : sizes) total += n > 0 ? static_cast<size_t>(n) : 0;
  if (total != steps.size() || sizes.empty()) return;
  size_t at = 0;
  for (const int32_t n : sizes) {
    const auto from = steps.begin() + static_cast<std::ptrdiff_t>(at);
    st.round_medians.push_back(n > 0 ? median({from, from + n}) : kNaN);
    at += static_cast<size_t>(std::max(n, 0));
  }
  std::vector<double> sorted, probes;
  for (const double m : st.round_medians) {
    if (std::isfinite(m)) sorted.push_back(m);
  }
  for (const double p : c.round_probe) {
    if (std::isfinite(p)) probes.push_back(p);
  }
  std::sort(sorted.begin(), sorted.end());
  const double own_limit = sorted.empty() ? kNaN : kSlowRoundFactor * percentile(sorted, 0.25);
  const bool probed = c.round_probe.size() == sizes.size() && !probes.empty();
  const double probe_limit = probed ? kSlowPhaseFactor * median(probes) : kNaN;
  size_t flagged = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    const bool slow = st.round_medians[r] > own_limit || (probed && c.round_probe[r] > probe_limit);
    st.round_slow.push_back(slow ? 1 : 0);
    flagged += slow ? 1 : 0;
  }
  // Where more look slow, that is how the machine ran: every round counts.
  if (static_cast<double>(flagged) > kMaxSlowShare * static_cast<double>(sizes.size())) {
    std::fill(st.round_slow.begin(), st.round_slow.end(), 0);
  }
}

}  // namespace

CaseStats case_stats(const CaseResult& c) {
  CaseStats st;
  std::vector<double> steps = step_times(c);
  set_rounds(c, steps, st);
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
  st.sent_bytes = step_sent_bytes(c);
  st.hardware_doubt = throttle_doubt(c);
  if (const std::string link = link_doubt(c); !link.empty()) {
    st.hardware_doubt += (st.hardware_doubt.empty() ? "" : "; ") + link;
  }
  st.ranks = rank_spread(c);
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

namespace {

// The reference cases of each shape (the first of each reference strategy per shape wins; a
// sweep runs each reference once), by key.
class References {
 public:
  References(const std::vector<CaseResult>& cases, const std::vector<CaseStats>& stats) {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].role() != StrategyRole::overlapping) by_key_.emplace(cases[i].key(), &stats[i]);
    }
  }
  // The stats of `c`'s shape's case of `role`, or null.
  const CaseStats* of(const CaseResult& c, StrategyRole role) const {
    auto it = by_key_.find(c.key().with_strategy(role_name(role)));
    return it == by_key_.end() ? nullptr : it->second;
  }
  double t(const CaseResult& c, StrategyRole role) const {
    const CaseStats* st = of(c, role);
    return st == nullptr ? kNaN : st->t_median;
  }

 private:
  std::map<CaseKey, const CaseStats*> by_key_;
};

struct Paired {
  double value = kNaN, low = kNaN, high = kNaN;
  int left_out = 0;  // rounds of a slow phase
};

// `f(r)` over the rounds r that every one of `cases` has and none ran in a slow phase of; the
// median and its interval where kMinPairedRounds or more pair up.
template <typename F>
Paired paired_rounds(const std::vector<const CaseStats*>& cases, F f) {
  Paired p;
  size_t n = 0;
  for (const CaseStats* c : cases) {
    if (c == nullptr || c->round_medians.size() != c->round_slow.size()) return p;
    if (n == 0) n = c->round_medians.size();
    if (c->round_medians.size() != n) return p;
  }
  std::vector<double> values;
  for (size_t r = 0; r < n; ++r) {
    const bool slow = std::any_of(cases.begin(), cases.end(),
                                  [&](const CaseStats* c) { return c->round_slow[r] != 0; });
    const double v = f(r);
    if (slow) ++p.left_out;
    if (!slow && std::isfinite(v)) values.push_back(v);
  }
  if (values.size() < static_cast<size_t>(kMinPairedRounds)) return Paired{};
  std::sort(values.begin(), values.end());
  p.value = median(values);
  median_interval(values, &p.low, &p.high);
  return p;
}

// speedup and T/T_lb of an overlapping case, paired round by round with its references.
void set_paired(Summary& s, const CaseStats& st, const CaseResult& c, const References& refs) {
  const CaseStats* base = refs.of(c, StrategyRole::serial_baseline);
  const CaseStats* comp = refs.of(c, StrategyRole::compute_reference);
  const CaseStats* comm = refs.of(c, StrategyRole::comm_reference);
  const Paired speedup = paired_rounds(
      {base, &st}, [&](size_t r) { return ratio(base->round_medians[r], st.round_medians[r]); });
  const Paired bound = paired_rounds({&st, comp, comm}, [&](size_t r) {
    return ratio(st.round_medians[r], std::max(comp->round_medians[r], comm->round_medians[r]));
  });
  if (std::isfinite(speedup.value)) s.speedup = speedup.value;
  s.speedup_ci_low = speedup.low;
  s.speedup_ci_high = speedup.high;
  s.t_over_tlb = std::isfinite(bound.value) ? bound.value : ratio(s.t_median, s.t_lb);
  s.t_over_tlb_ci_low = bound.low;
  s.t_over_tlb_ci_high = bound.high;
  const int left_out = std::max(speedup.left_out, bound.left_out);
  if (left_out > 0 && std::isfinite(speedup.value)) {
    s.doubts += (s.doubts.empty() ? "" : "; ") + std::to_string(left_out) +
                " round(s) in a slow phase of the machine left out of the paired speedup";
  }
}

// The overlap metrics of a strategy's row against its shape's references.
void set_overlap_metrics(Summary& s, double t_base) {
  const double t = s.t_median;
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

}  // namespace

std::vector<Summary> summarize(const std::vector<CaseResult>& cases,
                               const std::vector<CaseStats>& stats) {
  if (stats.size() != cases.size()) throw std::logic_error("summarize: one CaseStats per case");
  const References refs(cases, stats);
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
    s.transfer_sms = c.transfer_sms;
    s.t_median = st.t_median;
    s.t_min = st.t_min;
    s.t_p90 = st.t_p90;
    s.t_p99 = st.t_p99;
    s.t_cv = st.t_cv;
    s.t_ci_low = st.t_ci_low;
    s.t_ci_high = st.t_ci_high;
    s.doubts = st.hardware_doubt;
    set_rank_spread(s, st.ranks);

    const double t = s.t_median;
    s.t_comp = refs.t(c, StrategyRole::compute_reference);
    s.t_comm = refs.t(c, StrategyRole::comm_reference);
    s.t_lb = (std::isnan(s.t_comp) || std::isnan(s.t_comm)) ? kNaN : std::max(s.t_comp, s.t_comm);
    s.speedup_ci_low = s.speedup_ci_high = kNaN;
    s.t_over_tlb = s.t_over_tlb_ci_low = s.t_over_tlb_ci_high = kNaN;

    const bool is_compute_only = c.has_role(StrategyRole::compute_reference);
    const bool is_comm_only = c.has_role(StrategyRole::comm_reference);
    if (is_compute_only || is_comm_only) {
      // The references measure the bounds; overlap metrics of a bound against itself mean
      // nothing, so only what describes the case itself is filled in.
      s.exposed_comm = is_compute_only ? 0.0 : kNaN;
      s.speedup = s.ideal_speedup = s.comm_reduction = s.e2e_reduction = kNaN;
      s.overlap_efficiency = s.hidden_frac = s.overlap_pct = kNaN;
    } else {
      set_overlap_metrics(s, refs.t(c, StrategyRole::serial_baseline));
      set_paired(s, st, c, refs);
    }

    // compute_only's own compute-stream busy time: what a case's busy time is compared with
    // (its step time T_comp also holds the iteration's start and the gaps between tasks).
    const CaseStats* comp = refs.of(c, StrategyRole::compute_reference);
    s.slicing_penalty =
        is_comm_only || comp == nullptr ? kNaN : st.compute_busy - comp->compute_busy;
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
