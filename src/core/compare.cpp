// Case-by-case comparison of two results files.
//
// A case's verdict rests on an interval of its change rather than on the point change alone:
// with the handful of iterations a sweep affords, medians of two runs of the same code routinely
// differ by several percent, and only a change that the interval puts wholly past the threshold
// is reported. The interval is taken over rounds: a run's iterations come in rounds that ran
// apart in time, and a machine's slow phase moves a whole round at once, which treating single
// iterations as independent would average away. A rank-based interval over rounds, because a
// slow round drags a mean, and because a bootstrap of three
// rounds has a few distinct resamples and gave intervals of width 0.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "fob/compare.h"
#include "fob/config.h"
#include "fob/metrics.h"
#include "fob/speed_probe.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {

double median_probe(const ResultFile& file) {
  std::vector<double> probes;
  for (const CaseResult& c : file.cases) {
    for (const double p : c.round_probe) {
      if (std::isfinite(p)) probes.push_back(p);
    }
  }
  return probes.empty() ? std::numeric_limits<double>::quiet_NaN() : median(probes);
}

double median_host_load(const ResultFile& file) {
  const std::string key = "host_others_cpus=";
  std::vector<double> loads;
  for (const CaseResult& c : file.cases) {
    for (const std::string& fact : c.facts) {
      const size_t at = fact.find(key);
      if (at == std::string::npos) continue;
      const double v = std::strtod(fact.c_str() + at + key.size(), nullptr);
      if (std::isfinite(v) && v >= 0) loads.push_back(v);
    }
  }
  return loads.empty() ? std::numeric_limits<double>::quiet_NaN() : median(loads);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> pooled(const Rounds& rounds) {
  std::vector<double> out;
  for (const std::vector<double>& r : rounds) out.insert(out.end(), r.begin(), r.end());
  return out;
}

// The finite values of f(sample), keeping each one's round.
template <typename F>
Rounds map_finite(const Rounds& rounds, F f) {
  Rounds out;
  for (const std::vector<double>& r : rounds) {
    std::vector<double> kept;
    for (const double x : r) {
      const double y = f(x);
      if (std::isfinite(y)) kept.push_back(y);
    }
    if (!kept.empty()) out.push_back(std::move(kept));
  }
  return out;
}

// Step times by round: iteration i is in the round whose cumulative range of iterations holds
// it. Rounds that do not add up to the iterations (a hand-made case; the reader refuses such a
// file) say nothing about which iteration ran when, so the case is then one round.
//
// A round ran in a slow phase of the machine when its slot's speed probe passed `slow_limit`,
// or when its own median step took more than kSlowRoundFactor times the case's lower quartile
// of round medians: the phases a probe's GEMM cannot see (the scheduler handing a polling
// rank's core to a neighbour for a tick: small transfers at 2x, or 4 ms stalls, for several
// rounds on end) show in the times themselves, and nothing in a link or a GEMM makes a third
// of its rounds a quarter slower than the rest. Such rounds are left out (counted in
// `left_out`) while they are at most kMaxSlowShare of the rounds and kMinCompareRounds others
// remain; where more look slow, that is how the machine ran and every round counts.
Rounds step_samples(const CaseResult& c, double slow_limit = INFINITY, int* left_out = nullptr) {
  if (left_out != nullptr) *left_out = 0;
  const std::vector<double> all = step_times(c);
  if (all.empty()) return {};
  std::vector<int32_t> sizes = c.rounds();
  const bool sane = std::all_of(sizes.begin(), sizes.end(), [](int32_t n) { return n >= 0; }) &&
                    std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == c.iters;
  if (!sane) sizes = {c.iters};
  Rounds steps;
  for (auto next = all.begin(); const int32_t n : sizes) {
    steps.emplace_back(next, next + n);
    next += n;
  }
  steps = map_finite(steps, [](double s) { return s; });  // only the finite steps
  if (steps.size() != sizes.size()) return steps;  // rounds without a step: none is judged slow
  const bool probed = sane && c.round_probe.size() == sizes.size();
  std::vector<double> medians;
  for (const std::vector<double>& r : steps) medians.push_back(median(r));
  std::vector<double> sorted = medians;
  std::sort(sorted.begin(), sorted.end());
  const double own_limit = kSlowRoundFactor * percentile(sorted, 0.25);
  std::vector<bool> slow(steps.size());
  size_t flagged = 0;
  for (size_t r = 0; r < steps.size(); ++r) {
    slow[r] = (probed && c.round_probe[r] > slow_limit) || medians[r] > own_limit;
    flagged += slow[r] ? 1 : 0;
  }
  const size_t kept = steps.size() - flagged;
  if (flagged == 0 || kept < static_cast<size_t>(kMinCompareRounds) ||
      static_cast<double>(flagged) > kMaxSlowShare * static_cast<double>(steps.size())) {
    return steps;
  }
  Rounds out;
  for (size_t r = 0; r < steps.size(); ++r) {
    if (!slow[r]) out.push_back(std::move(steps[r]));
  }
  if (left_out != nullptr) *left_out = static_cast<int>(flagged);
  return out;
}

// The probe time past which a file's slot ran in a slow phase: kSlowPhaseFactor times its
// median probe; infinite where none was recorded.
double slow_limit_of(const ResultFile& file) {
  const double m = median_probe(file);
  return std::isnan(m) ? INFINITY : kSlowPhaseFactor * m;
}

// One file's cases by key, in file order; the first compute_only of a shape is its reference,
// as in summarize().
class CaseIndex {
 public:
  explicit CaseIndex(const ResultFile& file) : slow_limit_(slow_limit_of(file)) {
    for (const CaseResult& c : file.cases) by_key_[c.key()].push_back(&c);
  }
  double slow_limit() const { return slow_limit_; }
  const CaseResult* reference(const CaseKey& key, const std::string& strategy) const {
    auto it = by_key_.find(key.with_strategy(strategy));
    return it == by_key_.end() ? nullptr : it->second.front();
  }
  // The next case with this key not yet paired, or null.
  const CaseResult* take(const CaseKey& key) {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return nullptr;
    size_t& used = taken_[key];
    return used < it->second.size() ? it->second[used++] : nullptr;
  }

 private:
  std::map<CaseKey, std::vector<const CaseResult*>> by_key_;
  std::map<CaseKey, size_t> taken_;
  double slow_limit_ = INFINITY;
};

struct Samples {
  Rounds rounds;
  std::string problem;  // why there are none, when the metric cannot be taken at all
  // The variance of a reference subtracted from every sample (exposed_comm's T_comp: the mean
  // of its round medians is known only so well), which the interval must carry too.
  double offset_variance = 0;
  int slow_left_out = 0;  // rounds left out for a slow phase (step_samples)
};

// The variance of the mean of a case's round medians: how well the case's level is known.
double level_variance(const Rounds& rounds) {
  std::vector<double> medians;
  for (const std::vector<double>& r : rounds) {
    if (!r.empty()) medians.push_back(median(r));
  }
  if (medians.size() < 2) return 0;
  const double n = static_cast<double>(medians.size());
  const double mean = std::accumulate(medians.begin(), medians.end(), 0.0) / n;
  double sum = 0;
  for (const double m : medians) sum += (m - mean) * (m - mean);
  return sum / (n - 1) / n;
}

Samples metric_samples(const CaseResult& c, CompareMetric metric, const CaseIndex& index,
                       const char* which) {
  Samples s;
  const Rounds steps = step_samples(c, index.slow_limit(), &s.slow_left_out);
  switch (metric) {
    case CompareMetric::t:
      s.rounds = steps;
      break;
    case CompareMetric::exposed_comm: {
      const CaseResult* comp = index.reference(c.key(), role_name(StrategyRole::compute_reference));
      const Rounds comp_rounds = comp ? step_samples(*comp, index.slow_limit()) : Rounds();
      const double t_comp = comp ? median(pooled(comp_rounds)) : kNaN;
      s.offset_variance = level_variance(comp_rounds);
      if (std::isnan(t_comp)) {
        s.problem = std::string("no compute_only case of this shape with timed iterations in ") +
                    which + " (exposed_comm = T - T_comp needs it)";
        return s;
      }
      s.rounds = map_finite(steps, [t_comp](double t) { return t - t_comp; });
      break;
    }
    case CompareMetric::busbw:
      s.rounds = map_finite(steps, [&c](double t) { return case_busbw(c, t); });
      break;
  }
  return s;
}

// Why a matched pair is outside the metric's scope, or empty when it is inside.
std::string out_of_scope(CompareMetric metric, const std::string& strategy) {
  const Strategy* s = find_strategy(strategy);
  if (metric == CompareMetric::exposed_comm && s != nullptr && s->is_reference()) {
    return "compute_only and comm_only are the bounds exposed_comm is measured against";
  }
  if (metric == CompareMetric::busbw && (s == nullptr || s->role != StrategyRole::comm_reference)) {
    return "busbw is measured on comm_only cases only";
  }
  return {};
}

Verdict judge(CompareMetric metric, const Interval& ci, double threshold) {
  const bool worse_up = higher_is_worse(metric);
  const double worse_edge = worse_up ? ci.low : -ci.high;   // distance past 0 towards worse
  const double better_edge = worse_up ? -ci.high : ci.low;  // distance past 0 towards better
  if (worse_edge > threshold) return Verdict::regressed;
  if (better_edge > threshold) return Verdict::improved;
  if (ci.low >= -threshold && ci.high <= threshold) return Verdict::no_change;
  // Wide on the better side only: a change for the worse past the threshold is ruled out.
  const double worst = worse_up ? ci.high : -ci.low;
  if (worst <= threshold) return Verdict::no_regression;
  return Verdict::inconclusive;
}

// The interval's half-width, and the rounds per side that would bring it to the threshold: a
// bootstrap interval over rounds narrows as one over the square root of their number.
void set_power(CaseChange& c, const Interval& ci) {
  c.detectable = 0.5 * (ci.high - ci.low);
  c.rounds_needed = 0;
  if (c.verdict != Verdict::inconclusive) return;
  if (!(c.detectable > c.threshold) || !(c.threshold > 0)) return;
  const double rounds = std::max({c.base_rounds, c.new_rounds, 1});
  const double needed =
      std::ceil(rounds * (c.detectable / c.threshold) * (c.detectable / c.threshold));
  c.rounds_needed = static_cast<int>(std::min(needed, 1e6));
}

}  // namespace

void rejudge(CaseChange& c, CompareMetric metric, double threshold) {
  c.threshold = threshold;
  if (c.verdict == Verdict::too_few_rounds || !std::isfinite(c.ci_low) ||
      !std::isfinite(c.ci_high)) {
    return;
  }
  const Interval ci{c.ci_low, c.ci_high};
  c.verdict = judge(metric, ci, threshold);
  set_power(c, ci);
}

CompareMetric parse_compare_metric(const std::string& text) {
  if (text == "T") return CompareMetric::t;
  if (text == "exposed_comm") return CompareMetric::exposed_comm;
  if (text == "busbw") return CompareMetric::busbw;
  throw InputError("--metric " + quote_value(text) +
                   " is not known; choose T, exposed_comm or busbw");
}

const char* to_string(CompareMetric metric) {
  switch (metric) {
    case CompareMetric::t:
      return "T";
    case CompareMetric::exposed_comm:
      return "exposed_comm";
    case CompareMetric::busbw:
      return "busbw";
  }
  return "?";
}

bool higher_is_worse(CompareMetric metric) {
  return metric != CompareMetric::busbw;
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::no_change:
      return "no change";
    case Verdict::regressed:
      return "REGRESSED";
    case Verdict::improved:
      return "improved";
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::too_few_rounds:
      return "too few rounds";
    case Verdict::no_regression:
      return "no regression";
  }
  return "?";
}

int Comparison::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(changes.begin(), changes.end(),
                                        [&](const CaseChange& c) { return c.verdict == verdict; }));
}

namespace {

constexpr double kT975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                            2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                            2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};

// One side's round medians (logs for a ratio) and the spread of its iterations within rounds.
struct SideSpread {
  std::vector<double> medians;
  std::vector<double> deviations;  // |iteration - its round's median|, every iteration
};

SideSpread side_spread(const Rounds& rounds, bool difference) {
  SideSpread s;
  for (const std::vector<double>& r : rounds) {
    if (r.empty()) continue;
    const double m = median(r);
    if (!difference && !(m > 0)) continue;
    const double center = difference ? m : std::log(m);
    s.medians.push_back(center);
    for (const double x : r) {
      const double v = difference ? x : (x > 0 ? std::log(x) : center);
      s.deviations.push_back(std::fabs(v - center));
    }
  }
  return s;
}

// The variance of the mean of a side's round medians that its iterations' own spread gives:
// a median of n values from a spread sigma varies by (pi/2) sigma^2 / n, and sigma is taken
// robustly (1.4826 times the median absolute deviation), since a stalled iteration is a
// scheduler's, not the spread of the medians.
double within_variance(const SideSpread& s) {
  if (s.deviations.empty()) return 0;
  const double sigma = 1.4826 * median(s.deviations);
  return 1.5707963267948966 * sigma * sigma / static_cast<double>(s.deviations.size());
}

}  // namespace

double student_t_975(double df) {
  if (!(df >= 1)) return kT975[0];
  if (df <= 30) {
    const auto lo = static_cast<size_t>(std::floor(df));
    if (lo >= 30) return kT975[29];
    const double x = (1 / df - 1 / static_cast<double>(lo)) /
                     (1 / static_cast<double>(lo + 1) - 1 / static_cast<double>(lo));
    return kT975[lo - 1] + x * (kT975[lo] - kT975[lo - 1]);
  }
  // Past 30: linear in 1/df towards the normal's 1.96 (2.042 at 30, exact to 0.3 %).
  return 1.96 + (kT975[29] - 1.96) * 30 / df;
}

RoundChange round_change(const Rounds& base, const Rounds& next, bool difference,
                         double extra_variance) {
  const SideSpread b = side_spread(base, difference), n = side_spread(next, difference);
  if (b.medians.size() < 2 || n.medians.size() < 2) return {kNaN, {kNaN, kNaN}};
  // Hodges-Lehmann: the median of every difference of a NEW round and a BASE round, and the
  // distribution-free interval of the Mann-Whitney test between those order statistics (its
  // normal approximation; at least the extremes). A round in a slow phase is one extreme value
  // among many, where it would move a mean.
  std::vector<double> diffs;
  diffs.reserve(b.medians.size() * n.medians.size());
  for (const double x : n.medians) {
    for (const double y : b.medians) diffs.push_back(x - y);
  }
  std::sort(diffs.begin(), diffs.end());
  const double nb = static_cast<double>(b.medians.size());
  const double nn = static_cast<double>(n.medians.size());
  const double mn = nb * nn;
  const double k = std::floor(mn / 2 - 1.959964 * std::sqrt(mn * (nb + nn + 1) / 12));
  const size_t lo = static_cast<size_t>(std::max(0.0, k - 1));
  const size_t hi = diffs.size() - 1 - lo;
  const double d = median(diffs);
  Interval ci{diffs[lo], diffs[hi]};
  // Never narrower than the iterations' own spread (and a subtracted reference's) allows.
  const double floor2 = within_variance(b) + within_variance(n) + extra_variance;
  const double half = student_t_975(nb + nn - 2) * std::sqrt(floor2);
  ci.low = std::min(ci.low, d - half);
  ci.high = std::max(ci.high, d + half);
  if (difference) return {d, ci};
  return {std::exp(d) - 1, {std::exp(ci.low) - 1, std::exp(ci.high) - 1}};
}

namespace {

// The change of one matched pair, into `c`; or why it cannot be measured.
std::string measure_change(const CaseResult& b, const CaseResult& n, const Samples& bs,
                           const Samples& ns, CompareMetric metric, double threshold,
                           CaseChange& c) {
  const std::vector<double> b_values = pooled(bs.rounds), n_values = pooled(ns.rounds);
  if (b_values.size() < 2 || n_values.size() < 2) {
    return "BASE has " + std::to_string(b_values.size()) + " and NEW " +
           std::to_string(n_values.size()) +
           " timed iteration(s) with a value; at least 2 each are needed";
  }
  c.key = b.key();
  c.base_id = b.id;
  c.new_id = n.id;
  c.base_median = median(b_values);
  c.new_median = median(n_values);
  // exposed_comm crosses zero (a fully hidden transfer): its change is a difference, judged
  // against the threshold's share of the base case's step time, never a ratio to a near-zero
  // base.
  c.absolute = metric == CompareMetric::exposed_comm;
  c.threshold = c.absolute ? threshold * median(pooled(step_samples(b))) : threshold;
  if (!c.absolute && !(c.base_median > 0)) {
    return std::string("the median ") + to_string(metric) +
           " in BASE is not positive, so a relative change is undefined";
  }
  c.base_rounds = static_cast<int>(bs.rounds.size());
  c.new_rounds = static_cast<int>(ns.rounds.size());
  c.base_slow = bs.slow_left_out;
  c.new_slow = ns.slow_left_out;
  if (std::min(c.base_rounds, c.new_rounds) < kMinCompareRounds) {
    // One or two rounds show no spread to judge a run's drift by: no interval, no verdict.
    c.change = c.absolute ? c.new_median - c.base_median : c.new_median / c.base_median - 1;
    c.ci_low = c.ci_high = c.detectable = kNaN;
    c.verdict = Verdict::too_few_rounds;
    return {};
  }
  const RoundChange rc =
      round_change(bs.rounds, ns.rounds, c.absolute, bs.offset_variance + ns.offset_variance);
  const Interval ci = rc.ci;
  c.change = rc.change;
  c.ci_low = ci.low;
  c.ci_high = ci.high;
  c.verdict = std::isfinite(ci.low) && std::isfinite(ci.high) ? judge(metric, ci, c.threshold)
                                                              : Verdict::inconclusive;
  set_power(c, ci);
  return {};
}

}  // namespace

Comparison compare_results(const ResultFile& base, const ResultFile& next, CompareMetric metric,
                           double threshold_pct) {
  if (!std::isfinite(threshold_pct) || threshold_pct < 0) {
    throw InputError("--threshold " + std::to_string(threshold_pct) +
                     " is not valid; give a percentage >= 0, e.g. 5");
  }
  Comparison out;
  out.metric = metric;
  out.threshold_pct = threshold_pct;
  out.base_probe = median_probe(base);
  out.new_probe = median_probe(next);
  out.base_load = median_host_load(base);
  out.new_load = median_host_load(next);
  const double threshold = threshold_pct / 100;
  CaseIndex new_index(next);
  const CaseIndex base_refs(base), new_refs(next);  // untouched by pairing, for look-ups
  std::set<const CaseResult*> paired;

  for (const CaseResult& b : base.cases) {
    const CaseKey key = b.key();
    // A key that occurs twice in a file pairs in file order.
    const CaseResult* n = new_index.take(key);
    if (!n) {
      out.only_base.push_back({key, b.id});
      continue;
    }
    paired.insert(n);
    const std::string scope = out_of_scope(metric, key.strategy);
    if (!scope.empty()) {
      ++out.skipped;
      out.skipped_reason = scope;
      continue;
    }
    const Samples bs = metric_samples(b, metric, base_refs, "BASE");
    const Samples ns = metric_samples(*n, metric, new_refs, "NEW");
    NotComparable nc{key, b.id, n->id, ""};
    if (!bs.problem.empty() || !ns.problem.empty()) {
      nc.reason = bs.problem.empty() ? ns.problem : bs.problem;
      if (!bs.problem.empty() && !ns.problem.empty()) nc.reason += "; also in NEW";
      out.not_comparable.push_back(nc);
      continue;
    }
    CaseChange c;
    nc.reason = measure_change(b, *n, bs, ns, metric, threshold, c);
    if (!nc.reason.empty()) {
      out.not_comparable.push_back(nc);
      continue;
    }
    out.changes.push_back(c);
  }
  for (const CaseResult& n : next.cases) {
    if (!paired.count(&n)) out.only_new.push_back({n.key(), n.id});
  }
  return out;
}

std::string incomparable_machines(const SystemInfo& base, const SystemInfo& next) {
  if (base.on_cuda_model() == next.on_cuda_model()) return "";
  const SystemInfo& model = base.on_cuda_model() ? base : next;
  const SystemInfo& other = base.on_cuda_model() ? next : base;
  return std::string(base.on_cuda_model() ? "BASE" : "NEW") + " ran on the " + kCudaModelDevice +
         " (devices: " + model.devices + "), which runs the cuda backend's code on CPU threads: " +
         "its times are not GPU times and cannot be compared with " +
         (base.on_cuda_model() ? "NEW" : "BASE") + "'s (devices: " + other.devices +
         "); compare two files from the model, or two from real machines";
}

namespace {

// Both files measured (neither predicted) and their transports differ.
bool transports_differ(const SystemInfo& base, const SystemInfo& next) {
  return base.simulated.empty() && next.simulated.empty() && base.transport != next.transport;
}

}  // namespace

std::string incomparable_transports(const SystemInfo& base, const SystemInfo& next) {
  if (!transports_differ(base, next)) return "";
  return "BASE moved its data with transport " + base.transport + " and NEW with " +
         next.transport + ": their times measure different mechanisms";
}

std::vector<SettingDifference> setting_differences(const SystemInfo& base, const SystemInfo& next) {
  std::vector<SettingDifference> out;
  if (transports_differ(base, next)) {
    out.push_back({"transport", base.transport, next.transport,
                   "the changes below measure another way of moving the data as well as the "
                   "code (--across-transports)"});
  }
  if (base.link_emulation != next.link_emulation) {
    out.push_back({"link emulation", base.link_emulation, next.link_emulation,
                   "the changes below measure the link as well as the code"});
  }
  if (base.timer != next.timer) {
    out.push_back({"timer", base.timer, next.timer,
                   "the two files' times were taken by different clocks, so part of any change "
                   "may be the timer's, not the code's"});
  }
  return out;
}

bool is_prediction_pair(const ResultFile& base, const ResultFile& next) {
  return base.system.simulated.empty() != next.system.simulated.empty();
}

PredictionCheck compare_predictions(const ResultFile& measured, const ResultFile& simulated) {
  PredictionCheck out;
  out.machine = simulated.system.simulated;
  CaseIndex predicted(simulated);
  std::set<const CaseResult*> paired;
  for (const CaseResult& m : measured.cases) {
    const CaseResult* p = predicted.take(m.key());
    if (!p) {
      out.only_measured.push_back({m.key(), m.id});
      continue;
    }
    paired.insert(p);
    Prediction x;
    x.key = m.key();
    x.measured = median_step(m);
    x.predicted = median_step(*p);
    x.error = x.measured > 0 ? x.predicted / x.measured - 1 : kNaN;
    out.cases.push_back(x);
  }
  for (const CaseResult& p : simulated.cases) {
    if (!paired.count(&p)) out.only_predicted.push_back({p.key(), p.id});
  }
  return out;
}

}  // namespace fob
