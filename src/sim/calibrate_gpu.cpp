// The GPU side of `fobench calibrate` (calibrate_samples.h, fit_gpu): on a cuda run's files,
// the wave model's parameters from the measured GEMMs and NCCL's achieved rates from the
// measured collectives, so that a machine file fitted on one GPU prices thin slices, the SMs
// NCCL takes and a collective's size as that GPU did.
//
//   gpu        sms and comm_sms from the hardware facts every rank records ("comm_sms=16 of 132").
//   tiles      per GEMM dtype, the tiles cuBLAS's 16-bit kernels use (kTiles), their efficiencies,
//              gemm_k_overhead, max_split_k and gemm_memory_efficiency: least squares of the log
//              errors of every measured shape, each on the SMs it ran on (the whole GPU, or what
//              NCCL left a GEMM beside a transfer), by alternating one-dimensional searches.
//   achieved   per collective and nccl-tests size, the median busbw of comm_only's collectives;
//              send_recv from the shortest exchange of each size.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "calibrate_samples.h"
#include "fob/workload.h"

namespace fob::calib {
namespace {

// A tile and its efficiency relative to the largest tile's before the fit refines it
// (h100_nvlink_ib.yaml's estimates).
struct TilePrior {
  int64_t m, n;
  double ratio;
};
constexpr TilePrior kTiles[] = {
    {128, 256, 1}, {256, 128, 1}, {128, 128, 0.875}, {64, 128, 0.625}, {64, 64, 0.375}};
constexpr double kOverheads[] = {0, 32, 64, 128, 256};
constexpr int kSplits[] = {1, 2, 4, 8};

struct GpuFacts {
  int sms = 0, comm_sms = 0;
};

// The first "comm_sms=C of S" among the files' hardware facts.
GpuFacts gpu_facts(const std::vector<ResultFile>& files) {
  GpuFacts g;
  for (const ResultFile& f : files) {
    const std::string& text = f.system.hardware;
    const size_t at = text.find("comm_sms=");
    if (at == std::string::npos) continue;
    int comm = 0, sms = 0;
    if (std::sscanf(text.c_str() + at, "comm_sms=%d of %d", &comm, &sms) == 2 && sms > 0 &&
        comm >= 0 && comm < sms) {
      g.sms = sms;
      g.comm_sms = comm;
      return g;
    }
  }
  return g;
}

struct Sample {
  Task task;
  int sms = 0;
  double seconds = 0;
};

struct Fit {
  ComputeModel c;
  GpuModel gpu;
  double error = INFINITY;
};

double error_of(const Fit& f, DType dtype, const std::vector<Sample>& samples) {
  double sum = 0;
  for (const Sample& s : samples) {
    const double e = std::log(wave_gemm_seconds(f.c, f.gpu, dtype, s.task, s.sms) / s.seconds);
    sum += e * e;
  }
  return sum;
}

// Sets `*value` to the point of `grid` with the least error, keeping it where none is better.
void search(Fit& f, double* value, const std::vector<double>& grid, DType dtype,
            const std::vector<Sample>& samples) {
  double best = *value, best_error = error_of(f, dtype, samples);
  for (const double v : grid) {
    *value = v;
    const double e = error_of(f, dtype, samples);
    if (e < best_error) {
      best = v;
      best_error = e;
    }
  }
  *value = best;
  f.error = best_error;
}

std::vector<double> geometric(double lo, double hi, double step) {
  std::vector<double> out;
  for (double v = lo; v <= hi; v *= step) out.push_back(v);
  return out;
}

std::vector<double> linear(double lo, double hi, double step) {
  std::vector<double> out;
  const auto n = static_cast<int>(std::floor((hi - lo) / step + 1e-9));
  for (int i = 0; i <= n; ++i) out.push_back(std::min(hi, lo + i * step));
  return out;
}

// Peak and memory efficiency for one k overhead and split, then each tile's efficiency.
Fit fit_one(Fit f, DType dtype, const std::vector<Sample>& samples, double rate_lo,
            double rate_hi) {
  const std::vector<double> peaks = geometric(rate_lo / 2, rate_hi * 4, 1.01);
  const std::vector<double> fractions = linear(0.05, 1, 0.01);
  for (int round = 0; round < 3; ++round) {
    search(f, &f.c.peak_flops, peaks, dtype, samples);
    search(f, &f.c.gemm_memory_efficiency, fractions, dtype, samples);
  }
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 1; i < f.c.gemm_tiles.size(); ++i) {
      search(f, &f.c.gemm_tiles[i].efficiency, linear(0.05, 1, 0.025), dtype, samples);
    }
    search(f, &f.c.peak_flops, geometric(f.c.peak_flops / 1.05, f.c.peak_flops * 1.05, 1.001),
           dtype, samples);
  }
  // The fastest tile reaches the peak: every efficiency a fraction of it.
  double top = 0;
  for (const GemmTile& t : f.c.gemm_tiles) top = std::max(top, t.efficiency);
  for (GemmTile& t : f.c.gemm_tiles) t.efficiency /= top;
  f.c.peak_flops *= top;
  return f;
}

Sample sample_of(const GemmKey& key, double seconds, const GpuModel& g) {
  Sample s;
  s.task.kind = TaskKind::gemm;
  s.task.m = key.m;
  s.task.n = key.n;
  s.task.k = key.k;
  s.task.batch = key.batch;
  s.task.flops = 2.0 * static_cast<double>(key.m) * static_cast<double>(key.n) *
                 static_cast<double>(key.k) * key.batch;
  s.sms = key.beside ? g.sms - g.comm_sms : g.sms;
  s.seconds = seconds;
  return s;
}

std::vector<Sample> samples_of(DType dtype, const std::map<GemmKey, double>& gemm_median,
                               const GpuModel& g) {
  std::vector<Sample> out;
  for (const auto& [key, seconds] : gemm_median) {
    if (key.dtype == dtype) out.push_back(sample_of(key, seconds, g));
  }
  return out;
}

// Whether tile `i` is a fastest tile (ties count) of some compute-bound sample: only then is its
// efficiency measured.
bool measured_tile(const Fit& f, size_t i, DType dtype, const std::vector<Sample>& samples) {
  for (const Sample& s : samples) {
    const double with_all = wave_gemm_seconds(f.c, f.gpu, dtype, s.task, s.sms);
    Fit alone = f;
    alone.c.gemm_tiles = {f.c.gemm_tiles[i]};
    alone.c.gemm_memory_efficiency = 1e9;  // the tiles' time alone
    const double tiles = wave_gemm_seconds(alone.c, f.gpu, dtype, s.task, s.sms);
    alone.c.gemm_tiles.clear();
    const bool bound_by_tiles = tiles >= with_all * (1 - 1e-9);
    bool fastest = bound_by_tiles;
    for (size_t j = 0; j < f.c.gemm_tiles.size() && fastest; ++j) {
      if (j == i) continue;
      alone.c.gemm_tiles = {f.c.gemm_tiles[j]};
      fastest = wave_gemm_seconds(alone.c, f.gpu, dtype, s.task, s.sms) >= tiles * (1 - 1e-9);
    }
    if (fastest) return true;
  }
  return false;
}

// A tile no sample measured goes back to its starting ratio of the largest tile's efficiency,
// or as near it as leaves every measured shape's price unchanged (no sample may then take it).
// Returns the tiles' names, measured or not.
std::string restore_unmeasured(Fit& f, DType dtype, const std::vector<Sample>& samples) {
  std::string measured, not_measured;
  const double base = error_of(f, dtype, samples);
  for (size_t i = 0; i < f.c.gemm_tiles.size(); ++i) {
    GemmTile& t = f.c.gemm_tiles[i];
    const std::string name = std::to_string(t.m) + "x" + std::to_string(t.n);
    if (measured_tile(f, i, dtype, samples)) {
      measured += (measured.empty() ? "" : ", ") + name;
      continue;
    }
    not_measured += (not_measured.empty() ? "" : ", ") + name;
    // Lowering a tile no sample takes changes no price; raising it may make a sample take it.
    const double fitted = t.efficiency;
    for (t.efficiency = std::min(1.0, kTiles[i].ratio * f.c.gemm_tiles[0].efficiency);
         t.efficiency > fitted; t.efficiency -= 0.025) {
      if (error_of(f, dtype, samples) <= base * (1 + 1e-9) + 1e-18) break;
    }
    t.efficiency =
        std::max(t.efficiency, std::min(fitted, kTiles[i].ratio * f.c.gemm_tiles[0].efficiency));
  }
  return "measured by the shapes: " + (measured.empty() ? std::string("none") : measured) +
         "; not measured (their starting ratio, or what keeps the measured prices): " +
         (not_measured.empty() ? std::string("none") : not_measured);
}

std::string tile_text(const std::vector<GemmTile>& tiles) {
  std::string out;
  for (const GemmTile& t : tiles) {
    out += (out.empty() ? "" : ", ") + std::to_string(t.m) + "x" + std::to_string(t.n) + " " +
           fmt(t.efficiency);
  }
  return out;
}

// One dtype's wave model, fitted over every overhead and split, with its residuals; returns
// the split of k it chose.
int fit_dtype(DType dtype, const std::vector<Sample>& samples, const GpuFacts& g, ComputeModel& cm,
              FitReport& rep) {
  double lo = INFINITY, hi = 0;
  for (const Sample& s : samples) {
    const double rate = s.task.flops / s.seconds * g.sms / s.sms;
    lo = std::min(lo, rate);
    hi = std::max(hi, rate);
  }
  Fit best;
  for (const double overhead : kOverheads) {
    for (const int split : kSplits) {
      Fit f;
      f.c = cm;
      f.c.gemm_efficiency.clear();
      f.c.gemm_tiles.clear();
      for (const TilePrior& t : kTiles) f.c.gemm_tiles.push_back({t.m, t.n, t.ratio});
      f.c.gemm_k_overhead = overhead;
      f.c.gemm_memory_efficiency = 1;
      f.c.peak_flops = hi;
      f.gpu = {g.sms, g.comm_sms, split};
      f = fit_one(f, dtype, samples, lo, hi);
      if (f.error < best.error) best = f;
    }
  }
  const std::string tiles = restore_unmeasured(best, dtype, samples);
  cm = best.c;
  const double rms = std::sqrt(best.error / static_cast<double>(samples.size()));
  rep.notes.push_back(
      std::string(to_string(dtype)) + " wave model from " + std::to_string(samples.size()) +
      " GEMM shape(s), each on the SMs it ran on: peak_tflops " + fmt(cm.peak_flops / 1e12) +
      ", tiles [" + tile_text(cm.gemm_tiles) + "], gemm_k_overhead " + fmt(cm.gemm_k_overhead) +
      ", max_split_k " + std::to_string(best.gpu.max_split_k) + ", gemm_memory_efficiency " +
      fmt(cm.gemm_memory_efficiency) + " (least squares of log errors; rms " + fmt(rms * 100) +
      "%); tiles " + tiles);
  for (const Sample& s : samples) {
    rep.residuals.push_back({"gemm " + std::to_string(s.task.m) + "x" + std::to_string(s.task.n) +
                                 "x" + std::to_string(s.task.k) + " " + to_string(dtype) + " on " +
                                 std::to_string(s.sms) + " SMs",
                             s.seconds, wave_gemm_seconds(cm, best.gpu, dtype, s.task, s.sms)});
  }
  return best.gpu.max_split_k;
}

// Per op, the median busbw at each nccl-tests size of comm_only's collectives; send_recv from
// the shortest exchange of each size.
void fit_achieved(const Collected& data, LinkClass& link, std::vector<std::string>& notes) {
  std::map<int, std::map<int64_t, std::vector<double>>> rates;
  for (const LinkPoint& p : data.comm_only) {
    if (p.world < 2 || p.seconds <= 0) continue;
    const auto size = static_cast<int64_t>(p.bytes) * p.world;
    rates[achieved_index(p.op)][size].push_back(p.bytes / p.seconds);
  }
  for (const LinkPoint& p : data.exchange) {
    if (p.seconds <= 0) continue;
    auto& v = rates[0][static_cast<int64_t>(p.bytes)];
    v.assign(1, std::max(v.empty() ? 0.0 : v.front(), p.bytes / p.seconds));
  }
  for (const auto& [op, by_size] : rates) {
    std::vector<RatePoint>& table = link.achieved[static_cast<size_t>(op)];
    table.clear();
    for (const auto& [size, r] : by_size) table.push_back({size, median(r)});
    notes.push_back(std::string("achieved ") + achieved_name(op) + " on " + link.name + ": " +
                    std::to_string(table.size()) + " size(s), " +
                    (op == 0 ? "each the shortest exchange of that size (beside compute: a lower "
                               "bound of NCCL's rate)"
                             : "each the median busbw of comm_only's collectives of that size"));
  }
}

// The slowdown of a GEMM beside NCCL's kernels past the SMs they take: the median of each
// overlapped GEMM's duration over the fitted wave model's on the SMs NCCL left, at least 1.
void fit_beside_contention(const Collected& data, Machine& machine,
                           std::vector<std::string>& notes) {
  std::vector<double> ratios;
  for (const auto& [key, seconds] : data.beside_touched) {
    const auto it = machine.compute.find(key.dtype);
    if (it == machine.compute.end() || it->second.gemm_tiles.empty()) continue;
    Sample s = sample_of(key, seconds, machine.gpu);
    ratios.push_back(seconds /
                     wave_gemm_seconds(it->second, machine.gpu, key.dtype, s.task, s.sms));
  }
  if (ratios.empty()) {
    machine.contention = 1;
    notes.push_back("contention = 1: no GEMM on the SMs NCCL left ran while a transfer did");
    return;
  }
  const double m = median(ratios);
  machine.contention = std::max(1.0, m);
  notes.push_back("contention = " + fmt(machine.contention) + ": the median of " +
                  std::to_string(ratios.size()) +
                  " GEMMs' durations beside a transfer over the wave model's on the SMs NCCL "
                  "left" +
                  (m < 1 ? " (measured " + fmt(m) + ", clamped to 1)" : std::string()));
}

}  // namespace

void fit_gpu(const std::vector<ResultFile>& files, const Collected& data,
             const std::map<GemmKey, double>& gemm_median, Machine& machine, FitReport& rep) {
  const bool cuda = std::any_of(files.begin(), files.end(),
                                [](const ResultFile& f) { return f.system.backend == "cuda"; });
  if (!cuda) return;
  const GpuFacts g = gpu_facts(files);
  if (g.sms == 0) {
    rep.notes.push_back(
        "cuda files without an SM count in their hardware facts (comm_sms=C of S): no wave "
        "model; GEMMs that ran beside transfers were not fitted");
    return;
  }
  machine.gpu = {g.sms, g.comm_sms, 1};
  rep.notes.push_back("gpu: sms " + std::to_string(g.sms) + ", comm_sms " +
                      std::to_string(g.comm_sms) + " from the files' hardware facts");
  int split = 1;
  for (auto& [dtype, cm] : machine.compute) {
    const std::vector<Sample> samples = samples_of(dtype, gemm_median, machine.gpu);
    if (samples.empty()) continue;
    // The table's residuals give way to the wave model's.
    const std::string suffix = std::string(" ") + to_string(dtype);
    const auto table_residual = [&](const FitReport::Residual& r) {
      return r.what.rfind("gemm ", 0) == 0 && r.what.size() >= suffix.size() &&
             r.what.compare(r.what.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    rep.residuals.erase(std::remove_if(rep.residuals.begin(), rep.residuals.end(), table_residual),
                        rep.residuals.end());
    split = std::max(split, fit_dtype(dtype, samples, g, cm, rep));
  }
  machine.gpu.max_split_k = split;
  fit_beside_contention(data, machine, rep.notes);
  if (!machine.links.empty()) fit_achieved(data, machine.links.front(), rep.notes);
}

}  // namespace fob::calib
