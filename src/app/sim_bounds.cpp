// `fobench sim`'s bounds (sim_bounds.h).
#include "sim_bounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>

#include "fob/case_key.h"
#include "fob/cases.h"
#include "sim_tune.h"

namespace fob {
namespace {

// Bytes per task, measured on this build (peak resident set of `fobench sim` over plans of
// 8,000 to 130,000 tasks: about 600 a task held) and rounded up: a plan's task with its
// dependencies and label, the simulator's state for it, and its record in the case's result.
// A written file's stored tasks are held to the end, then again as the file is read back from
// its journal and as the file's image (430 measured), and take 116 bytes each in the file.
constexpr uint64_t kPlanBytesPerTask = 350;
constexpr uint64_t kSimBytesPerTask = 150;
constexpr uint64_t kRecordBytesPerTask = 150;
constexpr uint64_t kWriteBytesPerTask = 480;
constexpr uint64_t kFileBytesPerTask = 128;
// A run of a buffer's rows (RowRun), as the plan and its builder's row history hold it.
constexpr uint64_t kRunBytes = 64;
// What every sim holds beside its plans: the binary, the machine, the cases' summaries.
constexpr uint64_t kBaseBytes = uint64_t{64} << 20;

// Up to this world a case's plan is counted exactly (its rank 0's plan built); past it, counts
// at smaller worlds are extrapolated. Once two are taken, a count past kProbeTasks that still
// grows ends the climb to larger worlds.
constexpr int kExactWorld = 32;
constexpr int kFirstProbe = 16;
constexpr uint64_t kProbeTasks = 2048;
// No count is taken where the plan could be larger than this (its growth at kMaxSlope).
constexpr double kMaxProbeTasks = 65536;
constexpr double kMaxSlope = 2;
constexpr int kMaxRotationCheck = 64;
// A count is the mean over this many ranks at most, evenly spread over one period of the plans.
constexpr int kSampledRanks = 16;

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

// The largest divisor of `n` at most `at_most` (1 when none is 2 or more).
int largest_divisor(int n, int at_most) {
  for (int d = std::min(at_most, n); d >= 2; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// Worlds that divide `world`, ascending, each at most half the next and of `world`: a shape
// takes them where it takes `world`.
std::vector<int> probe_worlds(int world) {
  std::vector<int> ladder;
  for (int w = largest_divisor(world, world / 2); w >= 2; w = largest_divisor(world, w / 2)) {
    ladder.insert(ladder.begin(), w);
  }
  return ladder;
}

// What a plan holds that its build and simulation cost: its tasks, and the runs of rows its
// buffers are laid out in (slicing lays X out chunk by chunk, C runs a rank, and each task
// that touches X is recorded run by run).
struct PlanSize {
  double tasks = 0, runs = 0;
  double largest = 0;  // the tasks of the largest plan: every rank's records are padded to it
  double total() const { return tasks + runs; }
};

// A count at `world` grown from `from`'s at `from_world` as world^slope, the slope that of
// `before` at `before_world` to `from` (kMaxSlope where there is none). Every built-in
// strategy's count goes as a power of the world between -1 (attention's tiles, as heads / N) and
// 2 (ulysses' flash_stream, as N^2 m); a ring's as N (flash:m about 2 m N).
double grown(double from, double from_world, int world, double before, double before_world) {
  if (!(from > 0)) return 0;
  const double slope = before > 0 && before_world > 0
                           ? std::log(from / before) / std::log(from_world / before_world)
                           : kMaxSlope;
  return from * std::pow(world / from_world, std::clamp(slope, -1.0, kMaxSlope));
}

// The count at `world` on A / w + B + C w through three counts: what a ring's count is where
// a part of it shrinks as the world grows (ulysses' heads a rank, attention's tiles) and a part
// grows with the peers, which the power through the last two counts underestimates while the
// shrinking part still weighs.
double through_three(const std::vector<std::pair<double, PlanSize>>& points, int world,
                     double PlanSize::*count) {
  double m[3][4];
  for (int i = 0; i < 3; ++i) {
    const double w = points[static_cast<size_t>(i)].first;
    m[i][0] = 1 / w;
    m[i][1] = 1;
    m[i][2] = w;
    m[i][3] = points[static_cast<size_t>(i)].second.*count;
  }
  // Gaussian elimination; the worlds are distinct, so the system is regular.
  for (int k = 0; k < 3; ++k) {
    for (int i = k + 1; i < 3; ++i) {
      const double f = m[i][k] / m[k][k];
      for (int j = k; j < 4; ++j) m[i][j] -= f * m[k][j];
    }
  }
  double c[3];
  for (int k = 2; k >= 0; --k) {
    c[k] = m[k][3];
    for (int j = k + 1; j < 3; ++j) c[k] -= m[k][j] * c[j];
    c[k] /= m[k][k];
  }
  const double y = c[0] / world + c[1] + c[2] * world;
  return std::isfinite(y) ? y : 0;
}

uint64_t whole(double count) {
  return count >= 1e19 ? UINT64_MAX : static_cast<uint64_t>(count + 0.5);
}

// A rank's plan of `spec` at `world`, its size (the mean over the ranks); none where the shape
// does not take that world.
// Sizes are kept by case, as the cases of a sweep share shapes and strategies across worlds.
class PlanCounter {
 public:
  std::optional<PlanSize> at(const CaseSpec& spec, int world) {
    CaseSpec probe = spec;
    probe.world = world;
    const std::string key = CaseKey::of(probe).text();
    const auto it = sizes_.find(key);
    if (it != sizes_.end()) return it->second;
    std::optional<PlanSize> size;
    try {
      // The mean over the ranks of one period of the plans (sampled where that is many): a
      // ring's ranks build rotations of one plan, and ranks that differ may differ much, as the
      // mixture of experts' ranks do where the world is past the experts (those without one
      // only send and receive).
      const int period = std::clamp(plan_rotation_period(probe), 1, world);
      const int sampled = std::min(period, kSampledRanks);
      size = PlanSize{};
      for (int i = 0; i < sampled; ++i) {
        const Plan plan = make_plan(probe, static_cast<int>(int64_t{i} * period / sampled));
        size->tasks += static_cast<double>(plan.tasks.size()) / sampled;
        size->largest = std::max(size->largest, static_cast<double>(plan.tasks.size()));
        for (const BufferSpec& b : plan.buffers) {
          size->runs += static_cast<double>(b.layout.size()) / sampled;
        }
      }
    } catch (const InputError&) {
      // a world the shape does not divide by: not a point to count at
    }
    return sizes_[key] = size;
  }

  PlanSize estimate(const CaseSpec& spec) {
    const int world = spec.world;
    if (world <= kExactWorld) return at(spec, world).value_or(PlanSize{});
    const std::vector<int> ladder = probe_worlds(world);
    // Counted from the world nearest kFirstProbe up, while the plans stay small, then below it
    // where fewer than two were counted.
    size_t first = 0;
    while (first + 1 < ladder.size() && ladder[first + 1] <= kFirstProbe) ++first;
    std::vector<std::pair<double, PlanSize>> points;  // ascending worlds
    bool capped = false;
    for (size_t i = first; i < ladder.size(); ++i) {
      if (!points.empty()) {
        const double w = points.back().first, n = points.back().second.total();
        // Enough: two counts, the last large and growing (where counts still shrink, as heads a
        // rank do, the larger worlds are cheaper to count and tell more).
        if (points.size() >= 2 && n > kProbeTasks && n >= points.end()[-2].second.total()) break;
        // A plan that could be past kMaxProbeTasks is not counted: counting builds it.
        capped = n * (ladder[i] / w) * (ladder[i] / w) > kMaxProbeTasks;
        if (capped) break;
      }
      if (const auto n = at(spec, ladder[i])) points.emplace_back(ladder[i], *n);
    }
    for (size_t i = first; i-- > 0 && points.size() < 2;) {
      if (const auto n = at(spec, ladder[i])) points.emplace(points.begin(), ladder[i], *n);
    }
    // A world with no divisor to count at: its own plan counted.
    if (points.empty()) return at(spec, world).value_or(PlanSize{});
    // Past the counts taken, as the fastest growth any strategy has.
    const auto [b_world, b] = points.back();
    const bool slope = points.size() >= 2 && !capped;
    const double a_world = slope ? points[points.size() - 2].first : 0;
    const PlanSize a = slope ? points[points.size() - 2].second : PlanSize{};
    PlanSize out{grown(b.tasks, b_world, world, a.tasks, a_world),
                 grown(b.runs, b_world, world, a.runs, a_world),
                 grown(b.largest, b_world, world, a.largest, a_world)};
    if (slope && points.size() >= 3) {
      const std::vector<std::pair<double, PlanSize>> last(points.end() - 3, points.end());
      out.tasks = std::max(out.tasks, through_three(last, world, &PlanSize::tasks));
      out.runs = std::max(out.runs, through_three(last, world, &PlanSize::runs));
      out.largest = std::max(out.largest, through_three(last, world, &PlanSize::largest));
    }
    return out;
  }

  // Whether plans_to_simulate will find `spec`'s ranks rotations of its first `period`: where
  // they are not (a shape whose plans are not, as some of ulysses' are not), it builds every
  // rank's plan. Checked as it checks them, at the smallest world of 2 periods or more that
  // divides the case's, up to 64 ranks; assumed where there is none.
  bool rotates(const CaseSpec& spec, int period) {
    for (int w = 2 * period; w <= std::min(spec.world, kMaxRotationCheck); w += period) {
      if (spec.world % w != 0) continue;
      CaseSpec probe = spec;
      probe.world = w;
      const std::string key = CaseKey::of(probe).text() + " period " + std::to_string(period);
      if (const auto it = rotates_.find(key); it != rotates_.end()) return it->second;
      try {
        const Plan first = make_plan(probe, 0);
        const Plan last = make_plan(probe, w - 1);
        return rotates_[key] = is_rotation_of(make_plan(probe, period), first) &&
                               is_rotation_of(last, make_plan(probe, (w - 1) % period));
      } catch (const InputError&) {
        continue;  // a world the shape does not take
      }
    }
    return true;
  }

 private:
  std::map<std::string, std::optional<PlanSize>> sizes_;
  std::map<std::string, bool> rotates_;
};

SimCaseCost case_cost(const CaseSpec& spec, const CostModel& cost, PlanCounter& counter) {
  SimCaseCost c;
  const PlanSize size = counter.estimate(spec);
  c.plan_tasks = whole(size.tasks);
  c.plan_runs = whole(size.runs);
  c.record_tasks = std::max(c.plan_tasks, whole(size.largest));
  const int world = spec.world;
  const int64_t cost_period = cost.rotation_period(world);
  const int64_t plan_period = plan_rotation_period(spec);
  const int64_t period =
      cost_period < 1 || plan_period < 1 ? world : std::lcm(cost_period, plan_period);
  if (period >= world || world % period != 0 || !counter.rotates(spec, static_cast<int>(period))) {
    c.plans = c.stored = static_cast<uint64_t>(world);
  } else {
    // One period, and the ranks just past it and last, checked to be rotations.
    c.plans = static_cast<uint64_t>(period) + 2;
    c.stored = static_cast<uint64_t>(period);
  }
  return c;
}

// a * b, saturating.
uint64_t times(uint64_t a, uint64_t b) {
  return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
uint64_t plus(uint64_t a, uint64_t b) {
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

// "about N tasks", and "and M row runs" where its buffers are laid out in runs.
std::string plan_text(const SimCaseCost& c) {
  return "about " + with_commas(c.plan_tasks) + " tasks" +
         (c.plan_runs ? " and " + with_commas(c.plan_runs) + " row runs" : "");
}

// The case a refusal names: the one with the most task units.
std::string largest_case(const std::vector<CaseSpec>& specs, const SimEstimate& e) {
  size_t at = 0;
  for (size_t i = 1; i < specs.size(); ++i) {
    if (e.cases[i].work() > e.cases[at].work()) at = i;
  }
  return specs[at].strategy.text + " at world " + std::to_string(specs[at].world) + ": " +
         with_commas(e.cases[at].plans) + " plans of " + plan_text(e.cases[at]);
}

const char* const kSplit =
    "split it: fewer --world sizes, a smaller world, fewer strategies (--strategies) or "
    "sweep points";

void check_estimate(const std::vector<CaseSpec>& specs, const SimEstimate& e, bool writes_file,
                    int64_t available, const std::string& what) {
  const std::string count = what + ": " + with_commas(specs.size()) + " case(s) ";
  for (size_t i = 0; i < specs.size(); ++i) {
    if (e.cases[i].plan_size() <= kMaxSimPlanTasks) continue;
    SimCaseCost largest = e.cases[i];  // the largest plan, where the ranks' plans differ
    largest.plan_tasks = std::max(largest.plan_tasks, largest.record_tasks);
    throw InputError(what + ": " + specs[i].strategy.text + " at world " +
                     std::to_string(specs[i].world) + " makes plans of " + plan_text(largest) +
                     " a rank, more than the " + with_commas(kMaxSimPlanTasks) +
                     " one simulated plan takes; choose a smaller world or parameter");
  }
  if (e.work > kMaxSimWork) {
    throw InputError(count + "build and price plans of about " + with_commas(e.tasks) + " tasks, " +
                     with_commas(e.work) + " task units (the largest case, " +
                     largest_case(specs, e) + "), more than the " + with_commas(kMaxSimWork) +
                     " one sim takes; " + kSplit);
  }
  if (writes_file && e.file_bytes > kMaxSimFileBytes) {
    throw InputError(count + "make a results file of about " + gib(e.file_bytes) +
                     " (-o), more than the " + gib(kMaxSimFileBytes) +
                     " a simulated file may hold; " + kSplit + ", or leave -o out");
  }
  if (available >= 0 && e.memory_bytes > static_cast<uint64_t>(available)) {
    throw InputError(count + "need about " + gib(e.memory_bytes) + " of host memory" +
                     (writes_file ? " (with -o)" : "") + " but " +
                     gib(static_cast<uint64_t>(available)) + " are free; " + kSplit);
  }
}

}  // namespace

std::vector<CaseSpec> sim_cases(const std::vector<Config>& points, const std::vector<int>& worlds,
                                bool tune) {
  const std::string what = tune ? "sim --tune" : "sim";
  const auto refuse = [&](const std::string& count) {
    return InputError(what + ": " + std::to_string(worlds.size()) + " world size(s) x " +
                      std::to_string(points.size()) + " sweep point(s)" +
                      (tune ? " x every parameter of each strategy" : " x their strategies") +
                      " = " + count + " cases, more than the " + with_commas(kMaxSweepCases) +
                      " one sim takes; split the --world list or the sweep");
  };
  // Every (world, point) makes a case at least: refused on the product before any is made.
  if (times(worlds.size(), points.size()) > kMaxSweepCases) {
    throw refuse("at least " + with_commas(times(worlds.size(), points.size())));
  }
  std::vector<CaseSpec> specs;
  for (int world : worlds) {
    for (const Config& point : points) {
      for (const CaseSpec& spec : tune ? tune_cases(point, world) : make_cases(point, world)) {
        if (specs.size() == kMaxSweepCases) throw refuse("more than " + with_commas(specs.size()));
        specs.push_back(spec);
      }
    }
  }
  return specs;
}

uint64_t SimCaseCost::work() const {
  const uint64_t size = plus(plan_tasks, plan_runs);
  return times(plans, plus(size, times(size, size) / kPlanTasksQuadratic));
}

uint64_t SimCaseCost::plan_size() const {
  return plus(std::max(plan_tasks, record_tasks), plan_runs);
}

uint64_t estimated_plan_tasks(const CaseSpec& spec) {
  PlanCounter counter;
  return whole(counter.estimate(spec).tasks);
}

SimCaseCost sim_case_cost(const CaseSpec& spec, const CostModel& cost) {
  PlanCounter counter;
  return case_cost(spec, cost, counter);
}

SimEstimate check_sim_bounds(const std::vector<CaseSpec>& specs, const CostModel& cost,
                             bool writes_file, unsigned threads, int64_t available,
                             const std::string& what) {
  SimEstimate e;
  PlanCounter counter;
  uint64_t largest_case_bytes = 0, kept_bytes = 0;
  for (const CaseSpec& spec : specs) {
    const SimCaseCost c = case_cost(spec, cost, counter);
    e.cases.push_back(c);
    e.tasks = plus(e.tasks, times(c.plans, c.plan_tasks));
    e.work = plus(e.work, c.work());
    // Held while a case is simulated: its period's plans and one more, the simulator's state
    // and the result's records.
    const uint64_t per_plan = plus(plus(times(c.plan_tasks, kPlanBytesPerTask + kSimBytesPerTask),
                                        times(c.record_tasks, kRecordBytesPerTask)),
                                   times(c.plan_runs, kRunBytes));
    largest_case_bytes = std::max(largest_case_bytes, times(c.stored + 1, per_plan));
    if (writes_file) {
      kept_bytes = plus(kept_bytes, times(times(c.stored, c.record_tasks), kWriteBytesPerTask));
      e.file_bytes = plus(e.file_bytes, times(times(c.stored, c.record_tasks), kFileBytesPerTask));
    }
  }
  // Cases run `threads` at once; a written file's records stay, and are copied as it is
  // written.
  e.memory_bytes =
      plus(plus(kBaseBytes, times(largest_case_bytes, std::max(threads, 1u))), kept_bytes);
  check_estimate(specs, e, writes_file, available, what);
  return e;
}

}  // namespace fob
