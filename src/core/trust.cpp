#include "fob/trust.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "fob/metrics.h"
#include "fob/strategy.h"

namespace fob {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", fraction * 100.0);
  return text;
}

std::string cv_text(double cv) {
  char text[32];
  std::snprintf(text, sizeof text, "cv %.2f", cv);
  return text;
}

struct References {
  const Summary* comp = nullptr;
  const Summary* comm = nullptr;
};

void add(std::string& doubts, const std::string& reason) {
  doubts += (doubts.empty() ? "" : "; ") + reason;
}

bool noisy(const Summary* reference) {
  return reference != nullptr && std::isfinite(reference->t_cv) &&
         reference->t_cv > kNoisyReferenceCv;
}

// The figures that compare a strategy with its references: meaningless at one rank, and
// outside their range when a noisy reference put T below T_comp or above T_comp + T_comm.
void doubt_overlap_figures(Summary& s, const References& refs) {
  if (s.world == 1) {
    s.comm_reduction = s.overlap_efficiency = s.hidden_frac = s.overlap_pct = kNaN;
    add(s.doubts, "world 1: no communication, overlap figures n/a");
    return;
  }
  const std::string why = noisy(refs.comp) ? "T_comp noisy" : "noise";
  if (s.exposed_comm < 0) {
    add(s.doubts, "T below T_comp (" + why + "): comm_reduction, hidden n/a");
    s.comm_reduction = s.hidden_frac = kNaN;
  } else if (s.hidden_frac < 0) {
    add(s.doubts, "T above T_comp + T_comm: hidden n/a");
    s.hidden_frac = kNaN;
  }
  if (s.comm_reduction > 1) s.comm_reduction = kNaN;
  if (s.overlap_efficiency > 1) {
    add(s.doubts, "overlap_efficiency " + percent(s.overlap_efficiency) + " n/a (above 100%)");
    s.overlap_efficiency = kNaN;
  }
  if (s.speedup > s.ideal_speedup) add(s.doubts, "speedup above the ideal");
}

void assess_row(Summary& s, const References& refs) {
  const StrategyRole role = strategy_role(s.strategy);
  const bool reference =
      role == StrategyRole::compute_reference || role == StrategyRole::comm_reference;
  if (reference) {
    if (s.t_cv > kNoisyReferenceCv) add(s.doubts, "noisy: " + cv_text(s.t_cv));
    return;
  }
  if (noisy(refs.comp)) add(s.doubts, "T_comp noisy (" + cv_text(refs.comp->t_cv) + ")");
  if (noisy(refs.comm)) add(s.doubts, "T_comm noisy (" + cv_text(refs.comm->t_cv) + ")");
  if (std::isfinite(s.t_lb) && s.t_ci_high < s.t_lb) {
    add(s.doubts, "T below T_lb beyond its interval");
  }
  doubt_overlap_figures(s, refs);
}

}  // namespace

void median_interval(const std::vector<double>& sorted, double* low, double* high) {
  const double n = static_cast<double>(sorted.size());
  if (sorted.size() < 3) {
    *low = *high = median(sorted);
    return;
  }
  const double half = 0.98 * std::sqrt(n);
  const auto at = [&](double rank) {  // 1-based, clamped to the sample
    const double r = std::clamp(rank, 1.0, n);
    return sorted[static_cast<size_t>(r) - 1];
  };
  *low = at(std::floor(n / 2 - half));
  *high = at(std::ceil(n / 2 + 1 + half));
}

void assess_trust(std::vector<Summary>& rows) {
  std::map<CaseKey, References> refs;
  for (const Summary& s : rows) {
    const StrategyRole role = strategy_role(s.strategy);
    References& r = refs[s.with_strategy("")];
    if (role == StrategyRole::compute_reference && !r.comp) r.comp = &s;
    if (role == StrategyRole::comm_reference && !r.comm) r.comm = &s;
  }
  // The references' own rows are read above and written last, so every row sees their cv.
  for (Summary& s : rows) assess_row(s, refs[s.with_strategy("")]);
}

std::string noise_warning(const std::vector<Summary>& rows) {
  double worst = 0;
  std::string which;
  for (const Summary& s : rows) {
    const StrategyRole role = strategy_role(s.strategy);
    const bool reference =
        role == StrategyRole::compute_reference || role == StrategyRole::comm_reference;
    if (reference && std::isfinite(s.t_cv) && s.t_cv > worst) {
      worst = s.t_cv;
      which = s.strategy;
    }
  }
  if (worst <= kNoisyReferenceCv) return "";
  char text[320];
  std::snprintf(text, sizeof text,
                "fobench: noisy measurements: %s varied with cv %.2f (above %.2f), so the overlap "
                "figures derived from it are doubtful (each row says why); more rounds "
                "(--rounds 10), more iterations or idle cores would help",
                which.c_str(), worst, kNoisyReferenceCv);
  return text;
}

}  // namespace fob
