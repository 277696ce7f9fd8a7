// Samples that `fobench calibrate` fits (calibrate.cpp) to, collected from the results files:
// every case's plans regenerated, each recorded task mapped back to its Task, and its timings
// sorted into GEMM, element-wise, link, transfer-slowdown and launch pools. Internal to
// src/sim.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fob/calibrate.h"
#include "fob/machine.h"
#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/results.h"
#include "fob/strategy.h"

namespace fob::calib {

struct Interval {
  double start = 0, end = 0;
};

// One measured case with the plans it ran, regenerated.
struct CaseView {
  const ResultFile* file = nullptr;
  const CaseResult* c = nullptr;
  DType dtype = DType::fp32;
  const Strategy* strategy = nullptr;  // the table entry the case names
  std::vector<Plan> plans;

  const Task& task(int rank, int id) const {
    return plans[static_cast<size_t>(rank)].tasks[static_cast<size_t>(id)];
  }
  // The task's interval in iteration `iter`, false when not recorded (NaN) or not positive.
  bool timed(int iter, int rank, int id, Interval* out) const {
    const size_t i = c->timing_index(iter, rank, id);
    if (i >= c->task_start.size() || i >= c->task_end.size()) return false;
    const double s = c->task_start[i], e = c->task_end[i];
    if (!std::isfinite(s) || !std::isfinite(e) || e <= s) return false;
    *out = {s, e};
    return true;
  }
  // Per rank, its collectives' task ids in plan order: the k-th ones are one collective.
  std::vector<std::vector<int>> collectives() const {
    std::vector<std::vector<int>> ids(plans.size());
    for (size_t r = 0; r < plans.size(); ++r) {
      for (const Task& t : plans[r].tasks) {
        if (t.kind == TaskKind::collective) ids[r].push_back(t.id);
      }
    }
    return ids;
  }
  int iters() const { return c->timed_iters(); }
};

// Regenerates the case's plans into `v`; an empty string when they match the recorded tasks,
// else why not.
std::string regenerate(CaseView& v);

struct GemmKey {
  DType dtype = DType::fp32;
  int64_t m = 0, n = 0, k = 0;
  int batch = 1;
  // Ran on the SMs NCCL leaves (a cuda run's GEMM of tasks_beside_transfers): its time is not
  // the shape's on the whole GPU.
  bool beside = false;
  auto tie() const { return std::tie(dtype, m, n, k, batch, beside); }
  bool operator<(const GemmKey& o) const { return tie() < o.tie(); }
};

// An element-wise task's shape: its kind, m, n, k and whether it accumulates are what
// memory_elements() prices it by.
struct ElemKey {
  DType dtype = DType::fp32;
  TaskKind kind = TaskKind::add;
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;
  auto tie() const { return std::tie(dtype, kind, m, n, k, accumulate); }
  bool operator<(const ElemKey& o) const { return tie() < o.tie(); }
};

inline double elem_bytes(const ElemKey& key) {
  Task t;
  t.kind = key.kind;
  t.m = key.m;
  t.n = key.n;
  t.k = key.k;
  t.accumulate = key.accumulate;
  return memory_elements(t) * dtype_bytes(key.dtype);
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
  double bytes = 0;                      // one collective step's block, or one exchange's bytes
  double seconds = 0;                    // one step's time
  CollectiveOp op = CollectiveOp::none;  // the collective timed; none for an exchange
  int world = 0;                         // a collective's ranks
};

// A transfer of an overlapping strategy, for the transfer slowdown: from when its last end
// posted it to its end, with the stretches of that window in which a rank it involves computed.
struct TransferSample {
  bool collective = false;
  CollectiveOp op = CollectiveOp::none;  // a collective's op
  int world = 0;                         // a collective's ranks
  double bytes = 0;                      // a message's bytes, or one collective step's block
  int steps = 1;                         // a collective's steps (collective_steps.h)
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
  // A cuda run's GEMMs on the SMs NCCL left that a transfer overlapped (one rank's duration).
  std::vector<std::pair<GemmKey, double>> beside_touched;
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

// How much of [from, to) the intervals in `busy` cover.
double covered(const std::vector<Interval>& busy, double from, double to);

// Adds one case's samples to `out`.
void collect_case(const CaseView& v, Collected& out);

// On files of the cuda backend whose hardware facts give the SMs: the wave model (the GPU's
// SMs and comm SMs, each GEMM dtype's tile efficiencies, k overhead, split of k and GEMM memory
// efficiency, calibrate_gpu.cpp) and NCCL's achieved rate per collective and size. Nothing on
// other files.
void fit_gpu(const std::vector<ResultFile>& files, const Collected& data,
             const std::map<GemmKey, double>& gemm_median, Machine& machine, FitReport& rep);

// `x` with 4 significant digits, for notes.
std::string fmt(double x);

// The time t that minimises sum((t / t_i - 1)^2) over `times` (all positive, at least one):
// what a collective's iterations give the link fit, close to their median when they are alike,
// and near the short ones where some waited for the scheduler (calibrate_link.cpp).
double relative_location(const std::vector<double>& times);

// The link's latency and bandwidth from its transfer timings (calibrate_link.cpp), with notes
// on how they were fitted. Throws InputError when they give no positive bandwidth.
LinkClass fit_link(const std::vector<LinkPoint>& pts, const std::string& name,
                   std::vector<std::string>& notes);

}  // namespace fob::calib
