#include "link_ratio.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fob/case_key.h"
#include "fob/metrics.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr double kFirstGuessGbps = 1.0;
constexpr int kCorrections = 3;
// The same bounds config.cpp puts on link_gbps.
constexpr double kMinGbps = 1e-5, kMaxGbps = 1e9;

// The median step of one reference case of `first`'s shape, on `backend`; every rank gets it.
double probe_median(Backend& backend, const CaseSpec& first, StrategyRole role, int rank,
                    MPI_Comm comm, const ExecOptions& timing) {
  CaseSpec spec = first;
  spec.strategy = parse_strategy(role_name(role));
  Executor executor(backend, comm);
  const CaseResult result = executor.run_case(make_plan(spec, rank), timing, "probe");
  double t = rank == 0 ? median_step(result) : 0;
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, comm);
  return t;
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
  // iterations keep them out of the medians the choice rests on.
  timing.iters = std::min(timing.iters, 10);
  timing.warmup = 3;
  timing.rounds = 1;
  timing.verify = false;
  timing.progress_label.clear();
  const double t_comp = [&] {
    auto backend = make_cpu_backend(options);
    return probe_median(*backend, first, StrategyRole::compute_reference, rank, options.comm,
                        timing);
  }();
  const double target = ratio * t_comp;
  double gbps = kFirstGuessGbps, t_comm = 0;
  std::string steps;
  for (int k = 0; k < kCorrections; ++k) {
    options.link.gbps = gbps;
    auto backend = make_cpu_backend(options);
    t_comm =
        probe_median(*backend, first, StrategyRole::comm_reference, rank, options.comm, timing);
    char step[96];
    std::snprintf(step, sizeof step, "%s%.4g Gbit/s: %.3f ms", steps.empty() ? "" : ", ", gbps,
                  t_comm * 1e3);
    steps += step;
    if (!(t_comm > 0) || !(target > 0)) break;
    gbps = std::clamp(gbps * t_comm / target, kMinGbps, kMaxGbps);
  }
  char text[512];
  std::snprintf(text, sizeof text,
                "link_gbps %.9g chosen by link_ratio %.3g on %s: compute_only took %.3f ms, so "
                "T_comm was aimed at %.3f ms; comm_only at %s",
                gbps, ratio, shape_text(first).c_str(), t_comp * 1e3, target * 1e3, steps.c_str());
  return {gbps, text};
}

LinkChoice recorded_link(const SystemInfo& system, const std::string& path) {
  const std::string& text = system.link_emulation;
  const std::string emulated = "emulated: ";
  const auto refuse = [&](const std::string& why) {
    return InputError("--link-from '" + path + "': " + why + " (its link emulation: '" +
                      text.substr(0, 200) + "'); give a file of a run over an emulated link");
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
