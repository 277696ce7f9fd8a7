// Fits a Machine to measured results files (include/fob/calibrate.h). Every case's plans are
// regenerated with make_plan, so each recorded task id maps back to its Task (GEMM shape,
// element-wise extent, collective op); the files' timings then give:
//   GEMMs      per (dtype, m, n, k, batch) the median over iterations of each iteration's
//              slowest rank's duration, from compute_only cases where that shape ran there,
//              else from other cases' GEMMs that no comm-stream task of their rank overlapped.
//              peak_flops = the best rate seen, efficiency = rate / peak per (m, n, k) (the median
//              over batch counts).
//   memory     element-wise tasks (add 3 passes, copy/softmax 2, as the simulator prices
//              them): per distinct task the bytes touched / median duration; the median rate.
//   links      one class, least squares of per-step seconds on block bytes: comm_only
//              collectives (else baseline ones, else exchanges' minimum durations).
//   contention the median of duration / the shape's median duration on any rank over GEMMs of
//              overlapping strategies that started while a comm-stream task of their rank was
//              in flight, clamped to >= 1; contention.transfer and comm_start_us from the
//              transfers of overlapping strategies, launch_us from every task's wait from
//              ready to started (fit_interference).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fob/calibrate.h"
#include "fob/metrics.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

// Used when no element-wise task was measured in any dtype.
constexpr double kDefaultMemoryBytesPerS = 10e9;

std::string fmt(double x) {
  std::ostringstream s;
  s.precision(4);
  s << x;
  return s.str();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const size_t b = item.find_first_not_of(' ');
    const size_t e = item.find_last_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

struct Interval {
  double start = 0, end = 0;
};

// One measured case with the plans it ran, regenerated.
struct CaseView {
  const ResultFile* file = nullptr;
  const CaseResult* c = nullptr;
  DType dtype = DType::fp32;
  std::string strategy;  // the strategy's name, without its parameter
  std::vector<Plan> plans;

  const Task& task(int rank, int id) const {
    return plans[static_cast<size_t>(rank)].tasks[static_cast<size_t>(id)];
  }
  // The task's interval in iteration `iter`, false when not recorded (NaN) or not positive.
  bool timed(int iter, int rank, int id, Interval* out) const {
    const size_t i =
        (static_cast<size_t>(iter) * static_cast<size_t>(c->world) + static_cast<size_t>(rank)) *
            static_cast<size_t>(c->max_tasks) +
        static_cast<size_t>(id);
    if (i >= c->task_start.size() || i >= c->task_end.size()) return false;
    const double s = c->task_start[i], e = c->task_end[i];
    if (!std::isfinite(s) || !std::isfinite(e) || e <= s) return false;
    *out = {s, e};
    return true;
  }
  // Per rank, its collectives' task ids in plan order: the k-th ones are one ring.
  std::vector<std::vector<int>> collectives() const {
    std::vector<std::vector<int>> ids(plans.size());
    for (size_t r = 0; r < plans.size(); ++r) {
      for (const Task& t : plans[r].tasks) {
        if (t.kind == TaskKind::collective) ids[r].push_back(t.id);
      }
    }
    return ids;
  }
  int iters() const {
    const size_t per_iter = static_cast<size_t>(c->world) * static_cast<size_t>(c->max_tasks);
    if (per_iter == 0) return 0;
    return static_cast<int>(std::min(c->task_start.size(), c->task_end.size()) / per_iter);
  }
};

// Regenerates the case's plans; an empty string when they match the recorded tasks, else why
// not.
std::string regenerate(CaseView& v) {
  const CaseResult& c = *v.c;
  try {
    CaseSpec spec;
    spec.workload = parse_workload(c.workload);
    spec.shape.batch = c.batch;
    spec.shape.seq = c.seq;
    spec.shape.hidden = c.hidden;
    spec.shape.ffn = c.ffn;
    spec.shape.heads = c.heads;
    spec.dtype = parse_dtype(c.dtype);
    spec.world = c.world;
    spec.strategy = parse_strategy(c.strategy);
    v.dtype = spec.dtype;
    v.strategy = spec.strategy.strategy->name;
    for (int r = 0; r < c.world; ++r) v.plans.push_back(make_plan(spec, r));
  } catch (const std::exception& e) {
    v.plans.clear();
    return e.what();
  }
  for (int r = 0; r < c.world; ++r) {
    const Plan& p = v.plans[static_cast<size_t>(r)];
    if (static_cast<int32_t>(p.tasks.size()) > c.max_tasks) {
      return "rank " + std::to_string(r) + " has more tasks now than recorded";
    }
    for (const Task& t : p.tasks) {
      const size_t i =
          static_cast<size_t>(r) * static_cast<size_t>(c.max_tasks) + static_cast<size_t>(t.id);
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

struct GemmKey {
  DType dtype = DType::fp32;
  int64_t m = 0, n = 0, k = 0;
  int batch = 1;
  auto tie() const { return std::tie(dtype, m, n, k, batch); }
  bool operator<(const GemmKey& o) const { return tie() < o.tie(); }
};

struct ElemKey {
  DType dtype = DType::fp32;
  TaskKind kind = TaskKind::add;
  int64_t m = 0, n = 0;
  auto tie() const { return std::tie(dtype, kind, m, n); }
  bool operator<(const ElemKey& o) const { return tie() < o.tie(); }
};

double elem_bytes(const ElemKey& key) {
  const double passes = key.kind == TaskKind::add ? 3.0 : 2.0;
  return passes * static_cast<double>(key.m) * static_cast<double>(key.n) * dtype_bytes(key.dtype);
}

bool is_elementwise(TaskKind kind) {
  return kind == TaskKind::add || kind == TaskKind::copy || kind == TaskKind::softmax;
}

bool overlapping_strategy(const std::string& name) {
  return name == "slicing" || name == "decompose" || name == "flash" || name == "flash_direct" ||
         name == "flash_qs";
}

// Samples from both pools; the fit uses the reference (compute_only) pool where it has the key.
template <typename Key>
struct Pools {
  std::map<Key, std::vector<double>> reference, clean;
  std::map<Key, double> medians() const {
    std::map<Key, double> out;
    for (const auto& [key, v] : clean) out[key] = median(v);
    for (const auto& [key, v] : reference) out[key] = median(v);
    return out;
  }
};

struct LinkPoint {
  double bytes = 0;    // one ring step's block, or one exchange's bytes
  double seconds = 0;  // one step's time
};

// A transfer of an overlapping strategy, for the transfer slowdown: from when its last end
// posted it to its end, with the stretches of that window in which a rank it involves computed.
struct TransferSample {
  bool collective = false;
  double bytes = 0;  // a message's bytes, or one ring step's block
  int steps = 1;     // a collective's ring steps
  Interval window;
  std::vector<Interval> busy;  // disjoint, sorted, inside the window
};

// A transfer that became ready while its rank was computing: how long it waited to be posted.
// A transfer that became ready while its rank computed: its wait from ready to started, and
// how much longer that compute task ran. A wait that lasted that long is censored: it was
// posted only when the compute task ended, so it would have waited longer.
struct DelaySample {
  double wait = 0;
  double compute_left = 0;
};

struct Collected {
  Pools<GemmKey> gemm;
  Pools<ElemKey> elem;
  std::vector<std::pair<GemmKey, double>> contended;  // GEMMs started under a transfer
  // Every rank's duration of each GEMM no transfer touched: what a contended GEMM, one rank's
  // duration, is compared with (the fitted medians are the slowest rank's).
  Pools<GemmKey> gemm_any_rank;
  std::vector<LinkPoint> comm_only, baseline, exchange;
  std::vector<TransferSample> transfers;
  std::vector<DelaySample> delays;
  // From ready to started, per stream; not a transfer that became ready while its rank computed
  // (a delay sample, in overlapping strategies).
  std::vector<double> launch[kNumStreams];
};

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

double covered(const std::vector<Interval>& busy, double from, double to) {
  double sum = 0;
  for (const Interval& x : busy)
    sum += std::max(0.0, std::min(x.end, to) - std::max(x.start, from));
  return sum;
}

// How compute and transfers got in each other's way in an overlapping strategy's case: the
// transfers' windows with the compute inside them, and the waits of transfers that became
// ready while their rank computed. A task is ready when its stream's previous task and its
// deps have ended; a rank's first task of a stream without deps has no known ready time.
void collect_interference(const CaseView& v, bool overlaps, Collected& out) {
  const CaseResult& c = *v.c;
  const size_t world = static_cast<size_t>(c.world);
  std::vector<std::vector<int>> previous(world);  // per rank and task: the stream's previous
  for (size_t r = 0; r < world; ++r) {
    int last[kNumStreams] = {-1, -1};
    for (const Task& t : v.plans[r].tasks) {
      previous[r].push_back(last[static_cast<size_t>(t.stream)]);
      last[static_cast<size_t>(t.stream)] = t.id;
    }
  }
  // Message halves matched as the simulator matches them: the k-th send from a to b with a
  // tag meets the k-th receive on b from a with that tag.
  std::map<std::tuple<int, int, int>, std::vector<int>> sends, recvs;  // -> task ids in order
  std::vector<std::vector<std::vector<std::pair<int, int>>>> halves(world);
  for (size_t r = 0; r < world; ++r) {
    halves[r].resize(v.plans[r].tasks.size());
    for (const Task& t : v.plans[r].tasks) {
      const int rank = static_cast<int>(r);
      if (t.sends()) {
        sends[{rank, t.send_peer, t.tag}].push_back(t.id);
      }
      if (t.receives()) {
        recvs[{t.recv_peer, rank, t.tag}].push_back(t.id);
      }
    }
  }
  for (const auto& [key, ids] : sends) {
    const auto& [from, to, tag] = key;
    const auto it = recvs.find(key);
    if (it == recvs.end()) continue;
    for (size_t i = 0; i < std::min(ids.size(), it->second.size()); ++i) {
      halves[static_cast<size_t>(from)][static_cast<size_t>(ids[i])].emplace_back(to,
                                                                                  it->second[i]);
      halves[static_cast<size_t>(to)][static_cast<size_t>(it->second[i])].emplace_back(from,
                                                                                       ids[i]);
    }
  }
  const std::vector<std::vector<int>> colls = v.collectives();

  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int it = 0; it < v.iters(); ++it) {
    std::vector<std::vector<Interval>> at(world);         // per rank and task; NaN when untimed
    std::vector<std::vector<Interval>> computing(world);  // per rank
    for (size_t r = 0; r < world; ++r) {
      for (const Task& t : v.plans[r].tasks) {
        Interval iv{nan, nan};
        if (v.timed(it, static_cast<int>(r), t.id, &iv) && t.stream == StreamId::compute) {
          computing[r].push_back(iv);
        }
        at[r].push_back(iv);
      }
    }
    // NaN when one of them was not timed: std::max would drop a NaN second operand.
    auto latest_end = [&](double when, size_t r, int task) {
      const double end = at[r][static_cast<size_t>(task)].end;
      return std::isnan(end) ? nan : std::max(when, end);
    };
    auto ready = [&](size_t r, const Task& t) {
      double when = -INFINITY;
      const int prev = previous[r][static_cast<size_t>(t.id)];
      if (prev < 0 && t.deps.empty()) return nan;
      if (prev >= 0) when = latest_end(when, r, prev);
      for (int d : t.deps) when = latest_end(when, r, d);
      return when;
    };
    for (size_t r = 0; r < world; ++r) {
      size_t collective = 0;  // the rank's collectives so far
      for (const Task& t : v.plans[r].tasks) {
        if (t.kind == TaskKind::collective) ++collective;
        const Interval& mine = at[r][static_cast<size_t>(t.id)];
        const double when = ready(r, t);
        if (!std::isfinite(mine.start) || !std::isfinite(when)) continue;
        const double wait = std::max(0.0, mine.start - when);
        if (t.stream == StreamId::compute) {
          out.launch[static_cast<size_t>(StreamId::compute)].push_back(wait);
          continue;
        }
        // The compute task running when it became ready, or starting then: the first one
        // that ends later, if it was ready by then.
        bool under_compute = false;
        for (const Task& ct : v.plans[r].tasks) {
          if (ct.stream != StreamId::compute) continue;
          const Interval& ci = at[r][static_cast<size_t>(ct.id)];
          if (!std::isfinite(ci.end) || ci.end <= when) continue;
          const double ct_ready = ready(r, ct);
          if (std::isnan(ct_ready) ? ci.start <= when : ct_ready <= when) {
            under_compute = true;
            if (overlaps) out.delays.push_back({wait, ci.end - when});
          }
          break;
        }
        if (!under_compute) out.launch[static_cast<size_t>(StreamId::comm)].push_back(wait);
        if (!overlaps) continue;
        // The window: from the last of its halves' posts to its end.
        TransferSample sample;
        std::vector<size_t> involved{r};
        double start = mine.start;
        if (t.kind == TaskKind::collective) {
          const size_t k = collective - 1;
          sample.collective = true;
          sample.steps = ring_steps(c.world, t.op);
          int64_t block = 0;
          double end = mine.end;
          for (size_t q = 0; q < world; ++q) {
            if (k >= colls[q].size()) {  // no k-th collective there: no window to measure
              end = nan;
              break;
            }
            const Interval& theirs = at[q][static_cast<size_t>(colls[q][k])];
            if (!std::isfinite(theirs.start) || !std::isfinite(theirs.end)) end = nan;
            start = std::max(start, theirs.start);
            end = std::min(end, theirs.end);
            block = std::max(block, v.task(static_cast<int>(q), colls[q][k]).bytes / sample.steps);
            involved.push_back(q);
          }
          sample.bytes = static_cast<double>(block);
          sample.window = {start, end};
        } else {
          int64_t bytes = t.bytes;
          for (const auto& [q, id] : halves[r][static_cast<size_t>(t.id)]) {
            const double theirs = at[static_cast<size_t>(q)][static_cast<size_t>(id)].start;
            start = std::isnan(theirs) ? nan : std::max(start, theirs);
            bytes = std::max(bytes, v.task(q, id).bytes);
            involved.push_back(static_cast<size_t>(q));
          }
          sample.bytes = static_cast<double>(bytes);
          sample.window = {start, mine.end};
        }
        if (!std::isfinite(sample.window.start) || !std::isfinite(sample.window.end) ||
            sample.window.end <= sample.window.start || sample.bytes <= 0) {
          continue;
        }
        std::vector<Interval> busy;
        for (size_t q : involved) busy.insert(busy.end(), computing[q].begin(), computing[q].end());
        sample.busy = clip_merge(std::move(busy), sample.window);
        out.transfers.push_back(std::move(sample));
      }
    }
  }
}

void collect_case(const CaseView& v, Collected& out) {
  const CaseResult& c = *v.c;
  const bool reference = v.strategy == "compute_only";
  const bool overlaps = overlapping_strategy(v.strategy);
  const int iters = v.iters();
  // A step lasts as long as its slowest rank, so a GEMM's sample for an iteration is its
  // slowest rank's time: the simulator gives every rank that time, and its step then
  // matches the measured median of slowest-rank steps rather than a typical rank's.
  std::map<std::pair<int, int>, std::pair<GemmKey, double>> slowest_gemm;  // (iter, task)
  std::map<std::pair<int, int>, std::pair<ElemKey, double>> slowest_elem;
  std::map<std::pair<int, int>, std::pair<GemmKey, double>> slowest_clean_gemm;
  auto keep_slowest = [](auto& slowest, int it, int task, const auto& key, double d) {
    auto [entry, inserted] = slowest.try_emplace({it, task}, key, d);
    if (!inserted) entry->second.second = std::max(entry->second.second, d);
  };
  // Comm-stream intervals per iteration and rank.
  for (int it = 0; it < iters; ++it) {
    for (int r = 0; r < c.world; ++r) {
      std::vector<Interval> comm;
      for (const Task& t : v.plans[static_cast<size_t>(r)].tasks) {
        Interval iv;
        if (t.stream == StreamId::comm && v.timed(it, r, t.id, &iv)) comm.push_back(iv);
      }
      for (const Task& t : v.plans[static_cast<size_t>(r)].tasks) {
        if (t.stream != StreamId::compute) continue;
        if (t.kind != TaskKind::gemm && !is_elementwise(t.kind)) continue;
        Interval iv;
        if (!v.timed(it, r, t.id, &iv)) continue;
        const double d = iv.end - iv.start;
        bool touched = false, started_under = false;
        for (const Interval& x : comm) {
          touched = touched || (x.start < iv.end && x.end > iv.start);
          started_under = started_under || (x.start <= iv.start && iv.start < x.end);
        }
        if (t.kind == TaskKind::gemm) {
          const GemmKey key{v.dtype, t.m, t.n, t.k, t.batch};
          if (!touched) {
            keep_slowest(reference ? slowest_gemm : slowest_clean_gemm, it, t.id, key, d);
            (reference ? out.gemm_any_rank.reference : out.gemm_any_rank.clean)[key].push_back(d);
          }
          if (overlaps && started_under) out.contended.emplace_back(key, d);
        } else if (!touched) {
          const ElemKey key{v.dtype, t.kind, t.m, t.n};
          if (reference) {
            keep_slowest(slowest_elem, it, t.id, key, d);
          } else {
            out.elem.clean[key].push_back(d);
          }
        }
      }
    }
  }
  for (const auto& [where, sample] : slowest_gemm) {
    out.gemm.reference[sample.first].push_back(sample.second);
  }
  for (const auto& [where, sample] : slowest_clean_gemm) {
    out.gemm.clean[sample.first].push_back(sample.second);
  }
  for (const auto& [where, sample] : slowest_elem) {
    out.elem.reference[sample.first].push_back(sample.second);
  }
  if (c.world < 2 || iters == 0) return;
  collect_interference(v, overlaps, out);

  // Collectives, matched across ranks by their order: the ring ends together on every rank,
  // so the rank that posted last (the shortest duration) saw the ring's own time; the ring's
  // step moves the largest block, as the simulator prices it.
  if (v.strategy == "comm_only" || v.strategy == "baseline") {
    const std::vector<std::vector<int>> colls = v.collectives();
    for (size_t k = 0; k < colls[0].size(); ++k) {
      const Task& t0 = v.task(0, colls[0][k]);
      const int steps = ring_steps(c.world, t0.op);
      int64_t block = 0;
      bool same = true;
      for (int r = 0; r < c.world; ++r) {
        const auto& mine = colls[static_cast<size_t>(r)];
        if (k >= mine.size()) {
          same = false;
          break;
        }
        block = std::max(block, v.task(r, mine[k]).bytes / steps);
      }
      if (!same || block <= 0) continue;
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
      const LinkPoint p{static_cast<double>(block), median(per_iter) / steps};
      (v.strategy == "comm_only" ? out.comm_only : out.baseline).push_back(p);
    }
  }

  // Exchanges of strategies without the baseline's collectives: the minimum over iterations
  // and ranks, the instance least likely to include waiting for the peer.
  if (v.strategy != "comm_only" && v.strategy != "baseline" && v.strategy != "compute_only") {
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
}

// seconds = latency + bytes / bandwidth by least squares; through the origin when the sizes
// do not separate the two or the intercept comes out negative.
LinkClass fit_link(const std::vector<LinkPoint>& pts, const std::string& name,
                   std::vector<std::string>& notes) {
  LinkClass link;
  link.name = name;
  std::set<double> sizes;
  double sx = 0, sy = 0;
  for (const LinkPoint& p : pts) {
    sizes.insert(p.bytes);
    sx += p.bytes;
    sy += p.seconds;
  }
  const double n = static_cast<double>(pts.size());
  double slope = 0, intercept = 0;
  bool through_origin = sizes.size() < 2;
  if (!through_origin) {
    const double mx = sx / n, my = sy / n;
    double sxx = 0, sxy = 0;
    for (const LinkPoint& p : pts) {
      sxx += (p.bytes - mx) * (p.bytes - mx);
      sxy += (p.bytes - mx) * (p.seconds - my);
    }
    slope = sxy / sxx;
    intercept = my - slope * mx;
    if (intercept < 0 || slope <= 0) {
      notes.push_back("link " + name + ": the least-squares fit gave latency " + fmt(intercept) +
                      " s and " + fmt(slope) +
                      " s/B; refitted through the origin (latency 0) instead");
      through_origin = true;
    }
  } else {
    notes.push_back("link " + name + ": only one message size (" + fmt(*sizes.begin()) +
                    " B) was measured, so latency cannot be separated from bandwidth: "
                    "bandwidth fitted through the origin, latency 0");
  }
  if (through_origin) {
    double sxx = 0, sxy = 0;
    for (const LinkPoint& p : pts) {
      sxx += p.bytes * p.bytes;
      sxy += p.bytes * p.seconds;
    }
    slope = sxy / sxx;
    intercept = 0;
  }
  if (!(slope > 0) || !std::isfinite(slope)) {
    throw InputError("calibrate: the transfer timings give no positive bandwidth for link " + name);
  }
  link.latency_s = intercept;
  link.bytes_per_s = 1.0 / slope;
  return link;
}

std::string link_name(const SystemInfo& sys, bool multi_host) {
  if (sys.backend == "cuda") return multi_host ? "nccl" : "nvlink";
  if (sys.link_emulation.rfind("emulated", 0) == 0) return "emulated";
  return "shm";
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// A slowdown factor: the median of `samples`, at least 1, with a note on where it came from.
void fit_factor(const std::vector<double>& samples, const std::string& key, const std::string& from,
                const std::string& when_none, double& factor, std::vector<std::string>& notes) {
  if (samples.empty()) {
    notes.push_back(key + " = 1: " + when_none);
    return;
  }
  const double m = median(samples);
  factor = std::max(1.0, m);
  notes.push_back(key + " = " + fmt(factor) + ": the median of " + std::to_string(samples.size()) +
                  " " + from +
                  (m < 1 ? " (measured " + fmt(m) + ", clamped to 1)" : std::string()));
}

// The mean of the lowest 95% of `v`: launch waits add up along a step, so their mean is what
// a step pays, but a rare stall of the host (tens of ms) must not set it. 0 when empty.
double trimmed_mean(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t keep = std::max<size_t>(1, v.size() - v.size() / 20);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += v[i];
  return sum / static_cast<double>(keep);
}

// The launch overheads, the transfer slowdown under compute and the comm start delay (see
// Machine). A transfer's
// sample counts when compute covered at least half of its window: a message flows at bw while
// no rank it involves computes and at bw / f while one does, after its latency, so
// bytes / bw = idle + busy / f over its flowing time; a collective progresses at one ring step
// of latency + block / bw (block * f / bw under compute) per step. f is the median of the
// samples. The delay is the median wait, a censored wait (posted when the compute task ended)
// counting as longer than any.
void fit_interference(const Collected& data, const LinkClass& link, Machine& machine,
                      std::vector<std::string>& notes) {
  machine.launch_compute_s = trimmed_mean(data.launch[static_cast<size_t>(StreamId::compute)]);
  machine.launch_comm_s = trimmed_mean(data.launch[static_cast<size_t>(StreamId::comm)]);
  notes.push_back("launch_us = {compute: " + fmt(machine.launch_compute_s * 1e6) +
                  ", comm: " + fmt(machine.launch_comm_s * 1e6) +
                  "}: the mean (of the lowest 95%) wait from ready to started of " +
                  std::to_string(data.launch[0].size()) + " compute and " +
                  std::to_string(data.launch[1].size()) +
                  " comm tasks (transfers ready while their rank computed aside)");
  std::vector<double> factors;
  for (const TransferSample& s : data.transfers) {
    const double length = s.window.end - s.window.start;
    const double busy = covered(s.busy, s.window.start, s.window.end);
    if (busy < 0.5 * length) continue;
    double f = 0;
    if (s.collective) {
      const double step = link.latency_s + s.bytes / link.bytes_per_s;
      const double alone = s.steps * step;
      const double idle = length - busy;
      if (idle >= alone) continue;
      const double busy_step = busy / (1 - idle / alone) / s.steps;
      f = (busy_step - link.latency_s) * link.bytes_per_s / s.bytes;
    } else {
      const double from = s.window.start + link.latency_s;
      const double flowing = s.window.end - from;
      const double busy_flowing = covered(s.busy, from, s.window.end);
      const double alone = s.bytes / link.bytes_per_s;
      const double idle = flowing - busy_flowing;
      if (flowing <= 0 || idle >= alone || busy_flowing <= 0) continue;
      f = busy_flowing / (alone - idle);
    }
    if (std::isfinite(f) && f > 0) factors.push_back(f);
  }
  fit_factor(factors, "contention.transfer",
             "transfers' slowdowns, of those that ran mostly under compute, against the fitted "
             "link",
             "no transfer of an overlapping strategy ran mostly under compute",
             machine.transfer_contention, notes);

  // The simulator posts such a transfer at ready + launch + delay, or when the compute task
  // ends if sooner, but never before its launch is over: a compute task that ended within the
  // launch says nothing of the delay.
  std::vector<double> waits;
  double longest = 0;
  for (const DelaySample& d : data.delays) {
    if (d.compute_left <= machine.launch_comm_s) continue;
    const double wait = std::max(0.0, d.wait - machine.launch_comm_s);
    waits.push_back(d.wait >= d.compute_left ? INFINITY : wait);
    longest = std::max(longest, wait);
  }
  if (waits.empty()) {
    notes.push_back(
        "contention.comm_start_us = 0: no transfer became ready while its rank computed (for "
        "longer than a launch)");
    return;
  }
  std::sort(waits.begin(), waits.end());
  const double mid = waits[(waits.size() - 1) / 2];
  machine.comm_start_delay_s = std::isfinite(mid) ? mid : longest;
  notes.push_back("contention.comm_start_us = " + fmt(machine.comm_start_delay_s * 1e6) +
                  ": the median wait to be posted, after the launch, of " +
                  std::to_string(waits.size()) +
                  " transfers that became ready while their rank computed" +
                  (std::isfinite(mid) ? std::string()
                                      : " (most waited until the compute ended: the longest "
                                        "wait seen)"));
}

}  // namespace

Machine calibrate(const std::vector<ResultFile>& files, const std::string& name,
                  FitReport* report) {
  FitReport local;
  FitReport& rep = report != nullptr ? *report : local;
  std::vector<std::string>& notes = rep.notes;

  Collected data;
  int cases = 0, used = 0;
  for (const ResultFile& f : files) {
    for (const CaseResult& c : f.cases) {
      ++cases;
      CaseView v;
      v.file = &f;
      v.c = &c;
      const std::string why = regenerate(v);
      if (!why.empty()) {
        notes.push_back("case " + c.id + " (" + c.workload + " " + c.strategy +
                        ") skipped: cannot map its tasks: " + why);
        continue;
      }
      ++used;
      collect_case(v, data);
    }
  }

  // GEMMs.
  if (data.gemm.reference.empty() && data.gemm.clean.empty()) {
    throw InputError(
        "calibrate: no GEMM timings to fit in " + std::to_string(files.size()) + " file(s), " +
        std::to_string(cases) +
        " case(s): need a compute_only case (or GEMMs that ran with no transfer in flight)");
  }
  if (data.gemm.reference.empty()) {
    notes.push_back(
        "no compute_only case: GEMMs fitted from other cases' GEMMs that no transfer overlapped");
  }
  const std::map<GemmKey, double> gemm_median = data.gemm.medians();
  Machine machine;
  machine.name = name;
  // Rates per (dtype, m, n, k), one per batch count.
  std::map<DType, double> peak;
  std::map<std::tuple<DType, int64_t, int64_t, int64_t>, std::vector<double>> rates;
  for (const auto& [key, t] : gemm_median) {
    const double flops = 2.0 * static_cast<double>(key.m) * static_cast<double>(key.n) *
                         static_cast<double>(key.k) * key.batch;
    const double rate = flops / t;
    peak[key.dtype] = std::max(peak[key.dtype], rate);
    rates[{key.dtype, key.m, key.n, key.k}].push_back(rate);
  }
  for (const auto& [key, r] : rates) {
    const auto& [dtype, m, n, k] = key;
    if (r.size() > 1) {
      notes.push_back("gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                      std::to_string(k) + " " + to_string(dtype) + " ran with " +
                      std::to_string(r.size()) +
                      " batch counts: its efficiency is the median of their rates");
    }
    ComputeModel& cm = machine.compute[dtype];
    cm.peak_flops = peak[dtype];
    cm.gemm_efficiency.push_back({m, n, k, median(r) / peak[dtype]});
  }

  // Element-wise speed: per dtype, else another dtype's (bytes are bytes), else the default.
  const std::map<ElemKey, double> elem_median = data.elem.medians();
  std::map<DType, std::vector<double>> mem_rates;
  for (const auto& [key, t] : elem_median) mem_rates[key.dtype].push_back(elem_bytes(key) / t);
  std::vector<double> all_rates;
  for (const auto& [dtype, r] : mem_rates) all_rates.insert(all_rates.end(), r.begin(), r.end());
  for (auto& [dtype, cm] : machine.compute) {
    if (mem_rates.count(dtype) != 0) {
      cm.memory_bytes_per_s = median(mem_rates[dtype]);
    } else if (!all_rates.empty()) {
      cm.memory_bytes_per_s = median(all_rates);
      notes.push_back(std::string("no element-wise task measured in ") + to_string(dtype) +
                      ": memory_bytes_per_s taken from the other dtypes' (" +
                      fmt(cm.memory_bytes_per_s) + " B/s)");
    } else {
      cm.memory_bytes_per_s = kDefaultMemoryBytesPerS;
      notes.push_back(std::string("no element-wise (add/copy/softmax) task measured: ") +
                      to_string(dtype) + " memory_bytes_per_s set to the default " +
                      fmt(kDefaultMemoryBytesPerS) + " B/s, not measured");
    }
  }

  // GEMM residuals, and a warning where the memory side of a roofline would price a GEMM above
  // what was measured.
  for (const auto& [key, t] : gemm_median) {
    const ComputeModel& cm = machine.compute[key.dtype];
    double eff = 1;
    for (const GemmPoint& p : cm.gemm_efficiency) {
      if (p.m == key.m && p.n == key.n && p.k == key.k) eff = p.efficiency;
    }
    const double flops = 2.0 * static_cast<double>(key.m) * static_cast<double>(key.n) *
                         static_cast<double>(key.k) * key.batch;
    std::string what =
        "gemm " + std::to_string(key.m) + "x" + std::to_string(key.n) + "x" + std::to_string(key.k);
    if (key.batch != 1) what += " batch " + std::to_string(key.batch);
    what += std::string(" ") + to_string(key.dtype);
    rep.residuals.push_back({what, t, flops / (cm.peak_flops * eff)});
    const double bytes = static_cast<double>(key.m * key.k + key.k * key.n + key.m * key.n) *
                         key.batch * dtype_bytes(key.dtype);
    if (bytes / cm.memory_bytes_per_s > t) {
      notes.push_back(what + ": moving its operands at memory_bytes_per_s takes " +
                      fmt(bytes / cm.memory_bytes_per_s) + " s, longer than the measured " +
                      fmt(t) + " s");
    }
  }
  for (const auto& [key, t] : elem_median) {
    const ComputeModel& cm = machine.compute.count(key.dtype) != 0
                                 ? machine.compute.at(key.dtype)
                                 : ComputeModel{0, median(all_rates), {}};
    rep.residuals.push_back({std::string(to_string(key.kind)) + " " + std::to_string(key.m) + "x" +
                                 std::to_string(key.n) + " " + to_string(key.dtype),
                             t, elem_bytes(key) / cm.memory_bytes_per_s});
  }

  // Topology and the link's name.
  std::set<std::string> hosts;
  int ranks_per_node = 0;
  bool multi_host = false, uneven = false;
  std::set<std::string> backends, names;
  for (const ResultFile& f : files) {
    const std::vector<std::string> h = split_commas(f.system.hostnames);
    std::map<std::string, int> per_host;
    for (const std::string& x : h) ++per_host[x];
    int world = f.system.world_size;
    for (const CaseResult& c : f.cases) world = std::max(world, c.world);
    if (per_host.empty()) {
      ranks_per_node = std::max(ranks_per_node, world);
    } else {
      int lo = world, hi = 0;
      for (const auto& [host, count] : per_host) {
        hosts.insert(host);
        lo = std::min(lo, count);
        hi = std::max(hi, count);
      }
      uneven = uneven || lo != hi;
      ranks_per_node = std::max(ranks_per_node, hi);
      multi_host = multi_host || per_host.size() > 1;
    }
    backends.insert(f.system.backend + "/" + f.system.transport + " (" + f.system.link_emulation +
                    ", timer " + f.system.timer + ")");
  }
  for (const ResultFile& f : files) names.insert(link_name(f.system, multi_host));
  const std::string lname = files.empty() ? "shm" : link_name(files.front().system, multi_host);
  if (backends.size() > 1 || names.size() > 1) {
    std::string list;
    for (const std::string& b : backends) list += (list.empty() ? "" : ", ") + b;
    notes.push_back("the files come from different setups (" + list +
                    "): one link class fitted over all of them, named " + lname);
  }
  machine.ranks_per_node = std::max(1, ranks_per_node);
  if (uneven) notes.push_back("hosts ran different numbers of ranks: ranks_per_node is the most");

  // The link.
  const std::vector<LinkPoint>* pts = &data.comm_only;
  std::string from = "comm_only collectives";
  if (pts->empty()) {
    pts = &data.baseline;
    from = "baseline collectives (no comm_only case)";
  }
  if (pts->empty()) {
    pts = &data.exchange;
    from = "the shortest exchanges of the overlapping strategies (no comm_only or baseline case)";
  }
  if (pts->empty()) {
    throw InputError(
        "calibrate: no transfer timings to fit a link: need a comm_only case (collectives) or "
        "exchanges, at world size 2 or more");
  }
  const LinkClass link = fit_link(*pts, lname, notes);
  notes.push_back("link " + lname + " fitted from " + std::to_string(pts->size()) +
                  " point(s) of " + from + ": latency " + fmt(link.latency_s) + " s, " +
                  fmt(link.bytes_per_s) + " B/s");
  if (pts != &data.exchange) {
    notes.push_back(
        "reduce-scatter timings include the CPU's additions, which the simulator does not "
        "price: they count as link time here");
  }
  for (const LinkPoint& p : *pts) {
    rep.residuals.push_back({"link " + lname + " " + fmt(p.bytes) + " B", p.seconds,
                             link.latency_s + p.bytes / link.bytes_per_s});
  }
  machine.links.push_back(link);
  machine.intra_node = machine.inter_node = lname;
  std::string host_list;
  for (const std::string& h : hosts) host_list += (host_list.empty() ? "" : ",") + h;
  if (!multi_host) {
    notes.push_back(
        "all ranks ran on one host" + (host_list.empty() ? std::string() : " (" + host_list + ")") +
        ": ranks_per_node = " + std::to_string(machine.ranks_per_node) +
        ", and inter_node = intra_node = " + lname + " (no inter-node link was measured)");
  } else {
    notes.push_back(
        "ranks ran on " + std::to_string(hosts.size()) +
        " hosts, but one link class was fitted from rings that span them (a ring runs at its "
        "slowest link): intra_node = inter_node = " +
        lname);
  }

  // Contention.
  std::vector<double> ratios;
  const std::map<GemmKey, double> any_rank_median = data.gemm_any_rank.medians();
  for (const auto& [key, d] : data.contended) {
    const auto it = any_rank_median.find(key);
    if (it != any_rank_median.end()) ratios.push_back(d / it->second);
  }
  fit_factor(ratios, "contention",
             "GEMMs' durations over their shape's median duration on any rank, started under a "
             "transfer",
             "no GEMM of an overlapping strategy started while a transfer was in flight (or none "
             "had a fitted shape)",
             machine.contention, notes);

  fit_interference(data, link, machine, notes);

  // Where the numbers come from.
  std::string runs;
  for (const ResultFile& f : files) {
    if (!runs.empty()) runs += ", ";
    runs += f.run.created_utc.empty() ? std::string("?") : f.run.created_utc;
    if (!f.run.git_commit.empty()) runs += " (" + f.run.git_commit.substr(0, 12) + ")";
  }
  std::string setups;
  for (const std::string& b : backends) setups += (setups.empty() ? "" : "; ") + b;
  machine.source = "calibrated by fobench calibrate from " + std::to_string(files.size()) +
                   " results file(s) (runs " + runs + "; " + std::to_string(used) + " of " +
                   std::to_string(cases) + " cases) on " +
                   (host_list.empty() ? std::string("unknown host") : host_list) + ", " + setups +
                   ", " + today_utc();
  return machine;
}

}  // namespace fob
