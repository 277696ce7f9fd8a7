#include "fob/rank_stats.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "fob/metrics.h"
#include "fob/plan.h"

namespace fob {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Extremes {
  double min = kNaN, avg = kNaN, max = kNaN;
  int min_at = -1, max_at = -1;
};

// Over the finite values of `per_rank`; NaN where none is.
Extremes extremes(const std::vector<double>& per_rank) {
  Extremes e;
  double sum = 0;
  int n = 0;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    const double v = per_rank[r];
    if (!std::isfinite(v)) continue;
    if (n == 0 || v < e.min) e.min = v, e.min_at = static_cast<int>(r);
    if (n == 0 || v > e.max) e.max = v, e.max_at = static_cast<int>(r);
    sum += v;
    ++n;
  }
  if (n > 0) e.avg = sum / n;
  return e;
}

// Rank r's GEMM rate in iteration i: its compute tasks' flops over their summed time.
double gemm_rate(const CaseResult& c, int i, int r) {
  const auto compute = static_cast<int8_t>(StreamId::compute);
  double flops = 0, seconds = 0;
  for (int t = 0; t < c.max_tasks; ++t) {
    const TaskRecord& task = c.task_record(r, t);
    if (task.task < 0 || task.stream != compute || !(task.flops > 0)) continue;
    const double d = c.end(i, r, t) - c.start(i, r, t);
    if (!std::isfinite(d)) continue;
    flops += task.flops;
    seconds += d;
  }
  return seconds > 0 ? flops / seconds : kNaN;
}

// Rank r's compute-stream flops per iteration (its task table's).
double rank_flops(const CaseResult& c, int r) {
  const auto compute = static_cast<int8_t>(StreamId::compute);
  double flops = 0;
  for (int t = 0; t < c.max_tasks; ++t) {
    const TaskRecord& task = c.task_record(r, t);
    if (task.task >= 0 && task.stream == compute && task.flops > 0) flops += task.flops;
  }
  return flops;
}

// Rank r's expert time in iteration i: its experts' GEMMs and activations, summed; NaN where a
// time is missing.
double expert_seconds(const CaseResult& c, int i, int r) {
  const auto compute = static_cast<int8_t>(StreamId::compute);
  double seconds = 0;
  for (int t = 0; t < c.max_tasks; ++t) {
    const TaskRecord& task = c.task_record(r, t);
    const bool expert = task.kind == static_cast<int8_t>(TaskKind::gemm) ||
                        task.kind == static_cast<int8_t>(TaskKind::glu);
    if (task.task < 0 || task.stream != compute || !expert) continue;
    seconds += c.end(i, r, t) - c.start(i, r, t);
  }
  return seconds;
}

// The expert fields of `s`: each rank's median expert time, the largest, and its token share.
void set_expert_spread(const CaseResult& c, RankSpread& s) {
  std::vector<double> per_rank(static_cast<size_t>(c.ranks()));
  for (int r = 0; r < c.ranks(); ++r) {
    std::vector<double> own;
    for (int i = 0; i < c.iters; ++i) {
      const double d = expert_seconds(c, i, r);
      if (std::isfinite(d)) own.push_back(d);
    }
    per_rank[static_cast<size_t>(r)] = own.empty() ? kNaN : median(own);
  }
  const Extremes e = extremes(per_rank);
  s.expert_avg = e.avg;
  s.expert_max = e.max;
  s.hot_expert_rank = e.max_at;
  const std::vector<int64_t>& tokens = c.moe_load.rank_tokens;
  double all = 0;
  for (const int64_t n : tokens) all += static_cast<double>(n);
  if (e.max_at >= 0 && static_cast<size_t>(e.max_at) < tokens.size() && all > 0) {
    s.hot_token_share = static_cast<double>(tokens[static_cast<size_t>(e.max_at)]) / all;
  }
}

}  // namespace

RankSpread rank_spread(const CaseResult& c) {
  RankSpread s{kNaN, kNaN, kNaN, -1, kNaN, kNaN, kNaN, -1, true, kNaN, kNaN, -1, kNaN};
  const int iters = c.iters;
  if (iters <= 0 || c.max_tasks <= 0 || !c.arrays_match() ||
      c.step_seconds.size() != static_cast<size_t>(iters) * static_cast<size_t>(c.ranks())) {
    return s;
  }
  std::vector<double> steps(static_cast<size_t>(c.ranks())), rates(steps.size());
  for (int r = 0; r < c.ranks(); ++r) {  // ranks not stored ran as stored ones did
    std::vector<double> own, rate;
    for (int i = 0; i < iters; ++i) {
      own.push_back(c.step_seconds[static_cast<size_t>(i) * c.ranks() + r]);
      const double g = gemm_rate(c, i, r);
      if (std::isfinite(g)) rate.push_back(g);
    }
    steps[r] = median(own);
    rates[r] = rate.empty() ? kNaN : median(rate);
  }
  const Extremes t = extremes(steps), g = extremes(rates);
  s.t_min = t.min;
  s.t_avg = t.avg;
  s.t_max = t.max;
  s.slowest_rank = t.max_at;
  s.gemm_min = g.min;
  s.gemm_avg = g.avg;
  s.gemm_max = g.max;
  s.slowest_gemm_rank = g.min_at;
  for (int r = 1; r < c.ranks(); ++r) {
    s.same_gemm_work = s.same_gemm_work && rank_flops(c, r) == rank_flops(c, 0);
  }
  if (c.experts > 0) set_expert_spread(c, s);
  return s;
}

std::string straggler_doubt(const RankSpread& s) {
  std::string out;
  char text[200];
  if (s.slowest_rank >= 0 && s.t_avg > 0 && s.t_max / s.t_avg > kStragglerRatio) {
    std::snprintf(text, sizeof text,
                  "rank %d straggles: its median step %.3g ms is %.2fx the ranks' average",
                  s.slowest_rank, s.t_max * 1e3, s.t_max / s.t_avg);
    out += text;
  }
  if (s.same_gemm_work && s.slowest_gemm_rank >= 0 && s.gemm_min > 0 &&
      s.gemm_avg / s.gemm_min > kStragglerRatio) {
    std::snprintf(text, sizeof text,
                  "rank %d's GEMMs ran at %.3g GFLOP/s, 1/%.2f of the ranks' average (a slow "
                  "core or a busy neighbour)",
                  s.slowest_gemm_rank, s.gemm_min * 1e-9, s.gemm_avg / s.gemm_min);
    out += (out.empty() ? "" : "; ") + std::string(text);
  }
  return out;
}

std::string hot_expert_doubt(const RankSpread& s) {
  if (s.hot_expert_rank < 0 || !(s.expert_avg > 0) ||
      !(s.expert_max / s.expert_avg > kHotExpertRatio)) {
    return "";
  }
  char text[200];
  std::snprintf(text, sizeof text, "rank %d's experts took %.2fx the ranks' mean expert time",
                s.hot_expert_rank, s.expert_max / s.expert_avg);
  std::string out = text;
  if (std::isfinite(s.hot_token_share)) {
    std::snprintf(text, sizeof text, " (%.0f%% of the routed tokens)", 100 * s.hot_token_share);
    out += text;
  }
  return out;
}

std::string link_doubt(const CaseResult& c) {
  const std::string key = "link_achieved=";
  double worst = 1;
  std::string who;
  for (const std::string& fact : c.facts) {
    const size_t at = fact.find(key);
    if (at == std::string::npos) continue;
    const double v = std::strtod(fact.c_str() + at + key.size(), nullptr);
    if (std::isfinite(v) && v >= 0 && v < worst) {
      worst = v;
      who = fact.substr(0, fact.find(':'));  // "rank R"
    }
  }
  if (!(worst < kLinkShortfall)) return "";
  char text[160];
  std::snprintf(text, sizeof text,
                "%s's emulated link achieved %.2f of its target rate (the host's own transfer "
                "time exceeds the emulated one)",
                who.c_str(), worst);
  return text;
}

}  // namespace fob
