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
//   links      one class, seconds = latency + bytes / bandwidth by least squares of the
//              relative residuals (calibrate_link.cpp) of per-step seconds on block bytes, each
//              collective's iterations reduced to one time by the same criterion:
//              comm_only collectives (else baseline ones, else exchanges' minimum
//              durations). Every collective, all-to-all included, is read as the host backends run
//              it and the simulator prices it (collective_steps.h): N-1 steps of Task::bytes /
//              (N-1), so its time is (N-1)(latency + block / bandwidth). NCCL's all-to-all sends to
//              every peer at once and pays the latency about once: read this way, its points
//              understate the latency (a note says so).
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
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "calibrate_samples.h"
#include "fob/calibrate.h"
#include "fob/config.h"
#include "fob/metrics.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

// Used when no element-wise task was measured in any dtype.
constexpr double kDefaultMemoryBytesPerS = 10e9;

using namespace calib;  // NOLINT: the samples this file fits

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
    // NCCL's achieved rate where the link has one for the op (fit_gpu), else the fitted line.
    const std::vector<RatePoint>& table = link.achieved[static_cast<size_t>(
        achieved_index(s.collective ? s.op : CollectiveOp::none))];
    const double size = s.collective ? s.bytes * s.world : s.bytes;
    const double latency = table.empty() ? link.latency_s : 0.0;
    const double rate =
        table.empty() ? link.bytes_per_s : achieved_rate(table, static_cast<int64_t>(size));
    if (s.collective) {
      const double step = latency + s.bytes / rate;
      const double alone = s.steps * step;
      const double idle = length - busy;
      if (idle >= alone) continue;
      const double busy_step = busy / (1 - idle / alone) / s.steps;
      f = (busy_step - latency) * rate / s.bytes;
    } else {
      const double from = s.window.start + latency;
      const double flowing = s.window.end - from;
      const double busy_flowing = covered(s.busy, from, s.window.end);
      const double alone = s.bytes / rate;
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

// Every case's tasks mapped and their timings collected; a case whose tasks cannot be mapped
// is noted and skipped.
struct Gathered {
  Collected data;
  int cases = 0, used = 0;
};

Gathered collect_files(const std::vector<ResultFile>& files, std::vector<std::string>& notes) {
  Gathered g;
  for (const ResultFile& f : files) {
    for (const CaseResult& c : f.cases) {
      ++g.cases;
      CaseView v;
      v.file = &f;
      v.c = &c;
      const std::string why = regenerate(v);
      if (!why.empty()) {
        notes.push_back("case " + c.id + " (" + c.workload + " " + c.strategy +
                        ") skipped: cannot map its tasks: " + why);
        continue;
      }
      ++g.used;
      collect_case(v, g.data);
    }
  }
  return g;
}

double gemm_flops(const GemmKey& key) {
  return 2.0 * static_cast<double>(key.m) * static_cast<double>(key.n) *
         static_cast<double>(key.k) * key.batch;
}

// Each dtype's peak GEMM rate and every measured shape's efficiency against it.
void fit_gemms(const std::map<GemmKey, double>& gemm_median, Machine& machine,
               std::vector<std::string>& notes) {
  // Rates per (dtype, m, n, k), one per batch count.
  std::map<DType, double> peak;
  std::map<std::tuple<DType, int64_t, int64_t, int64_t>, std::vector<double>> rates;
  std::map<DType, double> beside_peak;
  for (const auto& [key, t] : gemm_median) {
    const double rate = gemm_flops(key) / t;
    if (key.beside) {
      // On the SMs NCCL left: the wave model (fit_gpu) prices these, not the table.
      beside_peak[key.dtype] = std::max(beside_peak[key.dtype], rate);
      continue;
    }
    peak[key.dtype] = std::max(peak[key.dtype], rate);
    rates[{key.dtype, key.m, key.n, key.k}].push_back(rate);
  }
  for (const auto& [dtype, rate] : beside_peak) {
    if (peak.count(dtype) == 0) machine.compute[dtype].peak_flops = rate;
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
}

// Element-wise speed: per dtype, else another dtype's (bytes are bytes), else the default.
// Returns every dtype's rates together.
std::vector<double> fit_memory(const std::map<ElemKey, double>& elem_median, Machine& machine,
                               std::vector<std::string>& notes) {
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
  return all_rates;
}

// GEMM residuals, and a warning where the memory side of a roofline would price a GEMM above
// what was measured; then the element-wise residuals.
void compute_residuals(const std::map<GemmKey, double>& gemm_median,
                       const std::map<ElemKey, double>& elem_median,
                       const std::vector<double>& all_rates, const Machine& machine,
                       FitReport& rep) {
  for (const auto& [key, t] : gemm_median) {
    if (key.beside) continue;  // fit_gpu's residuals
    const ComputeModel& cm = machine.compute.at(key.dtype);
    double eff = 1;
    for (const GemmPoint& p : cm.gemm_efficiency) {
      if (p.m == key.m && p.n == key.n && p.k == key.k) eff = p.efficiency;
    }
    std::string what =
        "gemm " + std::to_string(key.m) + "x" + std::to_string(key.n) + "x" + std::to_string(key.k);
    if (key.batch != 1) what += " batch " + std::to_string(key.batch);
    what += std::string(" ") + to_string(key.dtype);
    rep.residuals.push_back({what, t, gemm_flops(key) / (cm.peak_flops * eff)});
    const double bytes = static_cast<double>(key.m * key.k + key.k * key.n + key.m * key.n) *
                         key.batch * dtype_bytes(key.dtype);
    if (bytes / cm.memory_bytes_per_s > t) {
      rep.notes.push_back(what + ": moving its operands at memory_bytes_per_s takes " +
                          fmt(bytes / cm.memory_bytes_per_s) + " s, longer than the measured " +
                          fmt(t) + " s");
    }
  }
  for (const auto& [key, t] : elem_median) {
    ComputeModel fallback;
    fallback.memory_bytes_per_s = median(all_rates);
    const ComputeModel& cm =
        machine.compute.count(key.dtype) != 0 ? machine.compute.at(key.dtype) : fallback;
    rep.residuals.push_back({std::string(to_string(key.kind)) + " " + std::to_string(key.m) + "x" +
                                 std::to_string(key.n) + " " + to_string(key.dtype),
                             t, elem_bytes(key) / cm.memory_bytes_per_s});
  }
}

// Where the files' ranks ran and over what: the topology and the link's name.
struct Topology {
  std::set<std::string> hosts, backends;
  int ranks_per_node = 0;
  bool multi_host = false, uneven = false;
  std::string link;  // the link class's name
  std::string host_list() const {
    std::string list;
    for (const std::string& h : hosts) list += (list.empty() ? "" : ",") + h;
    return list;
  }
};

Topology topology(const std::vector<ResultFile>& files, std::vector<std::string>& notes) {
  Topology t;
  for (const ResultFile& f : files) {
    std::map<std::string, int> per_host;
    for (const std::string& x : split_list(f.system.hostnames)) ++per_host[x];
    int world = f.system.world_size;
    for (const CaseResult& c : f.cases) world = std::max(world, c.world);
    if (per_host.empty()) {
      t.ranks_per_node = std::max(t.ranks_per_node, world);
    } else {
      int lo = world, hi = 0;
      for (const auto& [host, count] : per_host) {
        t.hosts.insert(host);
        lo = std::min(lo, count);
        hi = std::max(hi, count);
      }
      t.uneven = t.uneven || lo != hi;
      t.ranks_per_node = std::max(t.ranks_per_node, hi);
      t.multi_host = t.multi_host || per_host.size() > 1;
    }
    t.backends.insert(f.system.backend + "/" + f.system.transport + " (" + f.system.link_emulation +
                      ", timer " + f.system.timer + ")");
  }
  std::set<std::string> names;
  for (const ResultFile& f : files) names.insert(link_name(f.system, t.multi_host));
  t.link = files.empty() ? "shm" : link_name(files.front().system, t.multi_host);
  if (t.backends.size() > 1 || names.size() > 1) {
    std::string list;
    for (const std::string& b : t.backends) list += (list.empty() ? "" : ", ") + b;
    notes.push_back("the files come from different setups (" + list +
                    "): one link class fitted over all of them, named " + t.link);
  }
  if (t.uneven) notes.push_back("hosts ran different numbers of ranks: ranks_per_node is the most");
  return t;
}

// The points a link is fitted to: comm_only's collectives, else baseline's, else the shortest
// exchanges of the overlapping strategies.
const std::vector<LinkPoint>& link_points(const Collected& data, std::string& from) {
  from = "comm_only collectives";
  if (!data.comm_only.empty()) return data.comm_only;
  from = "baseline collectives (no comm_only case)";
  if (!data.baseline.empty()) return data.baseline;
  from = "the shortest exchanges of the overlapping strategies (no comm_only or baseline case)";
  if (!data.exchange.empty()) return data.exchange;
  throw InputError(
      "calibrate: no transfer timings to fit a link: need a comm_only case (collectives) or "
      "exchanges, at world size 2 or more");
}

void note_link_points(const std::vector<LinkPoint>& pts, bool exchanges,
                      const std::vector<ResultFile>& files, std::vector<std::string>& notes) {
  if (!exchanges) {
    notes.push_back(
        "reduce-scatter timings include the CPU's additions, which the simulator does not "
        "price: they count as link time here");
  }
  const auto all_to_alls = std::count_if(
      pts.begin(), pts.end(), [](const LinkPoint& p) { return p.op == CollectiveOp::all_to_all; });
  if (all_to_alls == 0) return;
  bool nccl = false;
  for (const ResultFile& f : files) nccl = nccl || f.system.transport == "nccl";
  notes.push_back(
      std::to_string(all_to_alls) +
      " all-to-all point(s) read as N-1 pairwise steps of Task::bytes/(N-1), the host "
      "backends' schedule, which the simulator prices" +
      (nccl ? std::string("; NCCL sends an all-to-all's messages to every peer at once and "
                          "pays the latency about once, so its all-to-all points understate "
                          "the per-step latency")
            : std::string()));
}

// One link class from the transfers, the machine's topology around it, and its residuals.
void fit_machine_link(const Collected& data, const Topology& topo,
                      const std::vector<ResultFile>& files, Machine& machine, FitReport& rep) {
  std::vector<std::string>& notes = rep.notes;
  std::string from;
  const std::vector<LinkPoint>& pts = link_points(data, from);
  const LinkClass link = fit_link(pts, topo.link, notes);
  notes.push_back("link " + topo.link + " fitted from " + std::to_string(pts.size()) +
                  " point(s) of " + from +
                  " by least squares of the relative residuals (weights 1/seconds^2): latency " +
                  fmt(link.latency_s) + " s, " + fmt(link.bytes_per_s) + " B/s");
  note_link_points(pts, &pts == &data.exchange, files, notes);
  for (const LinkPoint& p : pts) {
    rep.residuals.push_back({"link " + topo.link + " " + fmt(p.bytes) + " B", p.seconds,
                             link.latency_s + p.bytes / link.bytes_per_s});
  }
  machine.links.push_back(link);
  machine.intra_node = machine.inter_node = topo.link;
  const std::string hosts = topo.host_list();
  if (!topo.multi_host) {
    notes.push_back(
        "all ranks ran on one host" + (hosts.empty() ? std::string() : " (" + hosts + ")") +
        ": ranks_per_node = " + std::to_string(machine.ranks_per_node) +
        ", and inter_node = intra_node = " + topo.link + " (no inter-node link was measured)");
  } else {
    notes.push_back(
        "ranks ran on " + std::to_string(topo.hosts.size()) +
        " hosts, but one link class was fitted from rings that span them (a ring runs at its "
        "slowest link): intra_node = inter_node = " +
        topo.link);
  }
}

void fit_contention(const Collected& data, Machine& machine, std::vector<std::string>& notes) {
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
}

// Where the numbers come from.
std::string source_text(const std::vector<ResultFile>& files, const Gathered& g,
                        const Topology& topo) {
  std::string runs;
  for (const ResultFile& f : files) {
    if (!runs.empty()) runs += ", ";
    runs += f.run.created_utc.empty() ? std::string("?") : f.run.created_utc;
    if (!f.run.git_commit.empty()) runs += " (" + f.run.git_commit.substr(0, 12) + ")";
  }
  std::string setups;
  for (const std::string& b : topo.backends) setups += (setups.empty() ? "" : "; ") + b;
  const std::string hosts = topo.host_list();
  return "calibrated by fobench calibrate from " + std::to_string(files.size()) +
         " results file(s) (runs " + runs + "; " + std::to_string(g.used) + " of " +
         std::to_string(g.cases) + " cases) on " +
         (hosts.empty() ? std::string("unknown host") : hosts) + ", " + setups + ", " + today_utc();
}

}  // namespace

Machine calibrate(const std::vector<ResultFile>& files, const std::string& name,
                  FitReport* report) {
  FitReport local;
  FitReport& rep = report != nullptr ? *report : local;
  std::vector<std::string>& notes = rep.notes;
  rep.warnings = calibration_warnings(files);
  const Gathered gathered = collect_files(files, notes);
  const Collected& data = gathered.data;
  if (data.gemm.reference.empty() && data.gemm.clean.empty()) {
    throw InputError(
        "calibrate: no GEMM timings to fit in " + std::to_string(files.size()) + " file(s), " +
        std::to_string(gathered.cases) +
        " case(s): need a compute_only case (or GEMMs that ran with no transfer in flight)" +
        (gathered.used == 0 && !notes.empty() ? "; " + notes.front() : std::string()));
  }
  if (data.gemm.reference.empty()) {
    notes.push_back(
        "no compute_only case: GEMMs fitted from other cases' GEMMs that no transfer overlapped");
  }
  Machine machine;
  machine.name = name;
  const std::map<GemmKey, double> gemm_median = data.gemm.medians();
  fit_gemms(gemm_median, machine, notes);
  const std::map<ElemKey, double> elem_median = data.elem.medians();
  const std::vector<double> all_rates = fit_memory(elem_median, machine, notes);
  compute_residuals(gemm_median, elem_median, all_rates, machine, rep);
  const Topology topo = topology(files, notes);
  machine.ranks_per_node = std::max(1, topo.ranks_per_node);
  fit_machine_link(data, topo, files, machine, rep);
  fit_gpu(files, data, gemm_median, machine, rep);
  if (machine.gpu.sms == 0) fit_contention(data, machine, notes);
  fit_interference(data, machine.links.front(), machine, notes);
  machine.source = source_text(files, gathered, topo);
  return machine;
}

}  // namespace fob
