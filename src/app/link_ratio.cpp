#include "link_ratio.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fob/case_key.h"
#include "fob/config.h"
#include "fob/executor.h"
#include "fob/metrics.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr double kFirstGuessGbps = 1.0;
// Probes: the first guess, and one at each correction of it.
constexpr int kProbes = 4;
// A ratio the closest probe missed by more than this factor was not reached, and the run says so
// on stderr and in the file: paired probes land within some 10% on an idle host, but a busy one
// can starve the emulated link's polling (a 5 us transfer taking 10 ms beside two busy loops on
// 2 cores), so a miss is said, never refused: a refusal would fail a reachable ratio there.
constexpr double kReachable = 3;
// The same bounds config.cpp puts on link_gbps.
constexpr double kMinGbps = 1e-5, kMaxGbps = 1e9;

// compute_only and comm_only of `first`'s shape on one backend, interleaved round by round, so
// that both slots of a round run in one phase of the machine: the median over rounds of each
// round's T_comm / T_comp (the rounds of a slow phase left out, as a paired speedup leaves them),
// and each case's median step for the account. Every rank gets them.
struct PairedProbe {
  double ratio = 0, t_comp = 0, t_comm = 0;
};

PairedProbe probe_pair(Backend& backend, const CaseSpec& first, int rank, MPI_Comm comm,
                       const ExecOptions& timing) {
  CaseSpec comp_spec = first, comm_spec = first;
  comp_spec.strategy = parse_strategy(role_name(StrategyRole::compute_reference));
  comm_spec.strategy = parse_strategy(role_name(StrategyRole::comm_reference));
  const Plan comp_plan = make_plan(comp_spec, rank), comm_plan = make_plan(comm_spec, rank);
  Executor executor(backend, comm);
  const std::vector<CaseResult> results =
      executor.run_cases({&comp_plan, &comm_plan}, {"probe0", "probe1"}, timing);
  double out[3] = {0, 0, 0};
  if (rank == 0) {
    const CaseStats comp = case_stats(results[0]), link = case_stats(results[1]);
    std::vector<double> ratios;
    for (size_t r = 0; r < comp.round_medians.size() && r < link.round_medians.size(); ++r) {
      if (comp.round_slow[r] || link.round_slow[r] || !(comp.round_medians[r] > 0)) continue;
      ratios.push_back(link.round_medians[r] / comp.round_medians[r]);
    }
    out[0] = ratios.empty() ? link.t_median / comp.t_median : median(ratios);
    out[1] = comp.t_median;
    out[2] = link.t_median;
  }
  MPI_Bcast(out, 3, MPI_DOUBLE, 0, comm);
  return {out[0], out[1], out[2]};
}

// A probed rate and the T_comm / T_comp it gave.
struct Landing {
  double gbps = 0, ratio = 0, t_comm = 0, t_comp = 0;
  // How far the ratio is from `target`, as a factor >= 1 (infinite before any probe).
  double off(double target) const {
    if (!(ratio > 0)) return std::numeric_limits<double>::infinity();
    return std::max(ratio / target, target / ratio);
  }
};

// What the probes reached against `target`, and why they missed it: past the floor that the
// emulated latency and the host's own MPI path set (or a busy host's starved polling), a faster
// link no longer shortens the transfers; below the slowest emulated rate there is nothing
// slower; else the probes moved about the target without landing near it.
std::string missed(double target, const std::vector<Landing>& probes, double latency_us) {
  const auto by_rate = [](const Landing& a, const Landing& b) { return a.gbps < b.gbps; };
  const Landing fastest = *std::max_element(probes.begin(), probes.end(), by_rate);
  const Landing slowest = *std::min_element(probes.begin(), probes.end(), by_rate);
  const Landing best = *std::min_element(
      probes.begin(), probes.end(),
      [&](const Landing& a, const Landing& b) { return a.off(target) < b.off(target); });
  char why[320];
  if (fastest.ratio > target * kReachable) {
    std::snprintf(why, sizeof why,
                  "even at %.4g Gbit/s, T_comm/T_comp was %.3f: a faster link no longer "
                  "shortens the transfers; lower --link-latency-us, take a larger shape (more "
                  "GEMM per transfer), or ask for link_ratio %.3g or more",
                  fastest.gbps, fastest.ratio, fastest.ratio);
  } else if (slowest.gbps <= kMinGbps && slowest.ratio < target / kReachable) {
    std::snprintf(why, sizeof why,
                  "even at the slowest emulated link, %.4g Gbit/s, T_comm/T_comp was %.3f; ask "
                  "for link_ratio %.3g or less",
                  slowest.gbps, slowest.ratio, slowest.ratio);
  } else {
    std::snprintf(why, sizeof why,
                  "the probes did not settle near it (the host busy?); rerun on an idle host, or "
                  "give the rate itself with --link-gbps");
  }
  char text[720];
  std::snprintf(text, sizeof text,
                "link_ratio %.3g NOT REACHED on this shape and host: the probes reached "
                "T_comm/T_comp %.3f at best (comm_only %.3f ms at %.4g Gbit/s and %.4g us "
                "latency a transfer, compute_only %.3f ms), more than %.2gx off; %s",
                target, best.ratio, best.t_comm * 1e3, best.gbps, latency_us, best.t_comp * 1e3,
                kReachable, why);
  return text;
}

std::string shape_text(const CaseSpec& spec) {
  std::string text = CaseKey::of(spec).with_strategy("").text();
  const size_t gap = text.find("  ");
  if (gap != std::string::npos) text.erase(gap, 1);
  return text;
}

}  // namespace

LinkChoice choose_link(double ratio, const CaseSpec& first, int rank, BackendOptions options,
                       ExecOptions timing) {
  // A fresh backend's first iterations run cold (page faults, BLAS start-up): a few warm-up
  // iterations keep them out of the medians the choice rests on. Five rounds of two
  // iterations pair compute_only's and comm_only's slots in time.
  timing.iters = std::min(timing.iters, 10);
  timing.warmup = 3;
  timing.rounds = std::min(5, timing.iters);
  timing.verify = false;
  timing.progress_label.clear();
  double gbps = kFirstGuessGbps;
  std::vector<Landing> probes;
  Landing best;
  PairedProbe probe;
  std::string steps;
  // The last probe is at the last correction's rate, so the rate chosen is one whose ratio was
  // measured: the probed rate that came closest.
  for (int k = 0; k < kProbes; ++k) {
    options.link.gbps = gbps;
    auto backend = make_cpu_backend(options);
    probe = probe_pair(*backend, first, rank, options.comm, timing);
    char step[128];
    std::snprintf(step, sizeof step, "%s%.4g Gbit/s: %.3f ms (T_comm/T_comp %.3f)",
                  steps.empty() ? "" : ", ", gbps, probe.t_comm * 1e3, probe.ratio);
    steps += step;
    if (!(probe.ratio > 0) || !(ratio > 0)) break;
    probes.push_back({gbps, probe.ratio, probe.t_comm, probe.t_comp});
    if (probes.back().off(ratio) < best.off(ratio)) best = probes.back();
    // The transfer time goes as one over the rate: scale the rate by how far the ratio is off.
    gbps = std::clamp(gbps * probe.ratio / ratio, kMinGbps, kMaxGbps);
  }
  if (probes.empty()) probes.push_back({gbps, probe.ratio, probe.t_comm, probe.t_comp});
  if (!(best.gbps > 0)) best = probes.back();
  char text[320];
  std::snprintf(text, sizeof text,
                "link_gbps %.9g chosen by link_ratio %.3g on %s: compute_only and comm_only "
                "paired round by round, compute_only at %.3f ms; comm_only at ",
                best.gbps, ratio, shape_text(first).c_str(), best.t_comp * 1e3);
  char reached[96];
  std::snprintf(reached, sizeof reached, "; T_comm/T_comp %.3f reached at the chosen rate",
                best.ratio);
  LinkChoice choice{best.gbps, text + steps + reached};
  if (best.off(ratio) > kReachable) {
    choice.probe += "; " + missed(ratio, probes, options.link.latency_us);
  }
  return choice;
}

LinkChoice recorded_link(const SystemInfo& system, const std::string& path) {
  const std::string& text = system.link_emulation;
  const std::string emulated = "emulated: ";
  const auto refuse = [&](const std::string& why) {
    return InputError("--link-from " + quote_value(path) + ": " + why + " (its link emulation: " +
                      quote_value(text) + "); give a file of a run over an emulated link");
  };
  if (text.rfind(emulated, 0) != 0) throw refuse("its link was not emulated");
  LinkChoice choice;
  char* end = nullptr;
  choice.gbps = std::strtod(text.c_str() + emulated.size(), &end);
  // Where --link-ratio chose the rate, its account holds it to 9 digits, and is kept whole.
  const size_t open = text.find(" (link_gbps ");
  if (open != std::string::npos && text.back() == ')') {
    choice.probe = text.substr(open + 2, text.size() - open - 3);
    choice.gbps = std::strtod(choice.probe.c_str() + std::strlen("link_gbps "), &end);
  }
  if (!(choice.gbps >= kMinGbps && choice.gbps <= kMaxGbps)) {
    throw refuse("its rate does not read as a number of Gbit/s");
  }
  return choice;
}

}  // namespace fob
