// The link `fobench calibrate` fits (calibrate.cpp): one step of `bytes` takes
// latency + bytes / bandwidth seconds (Hockney's model, LogGP's alpha and beta), fitted to the
// per-step times of the measured message sizes.
//
// One criterion, least squares of relative residuals (model / measured - 1), at both levels:
//   a collective's time over its iterations: the t that minimises sum_i (t / t_i - 1)^2,
//     t = sum(1 / t_i) / sum(1 / t_i^2) (relative_location);
//   the line over the collectives: weighted least squares with weights 1 / seconds^2 (fit_link).
// Timing noise is relative: a step's spread grows with its length (a preemption, a page fault or
// a busy neighbour costs a share of it). An unweighted fit gives a 16 MiB step's noise a weight
// a million times a 4 KiB step's, so the largest messages set both parameters and the intercept,
// microseconds of latency beside milliseconds of noise, lands anywhere, negative as often as
// not. Weighting by the relative error is the maximum-likelihood fit for noise proportional to
// the time: every size counts alike, the small messages (mostly latency) fix the latency and the
// large ones (mostly bytes) the bandwidth, as OSU's latency and bandwidth tests measure them
// apart, but in one fit with no threshold size to choose.
// Noise on a shared machine only adds time, and where other work holds the cores most
// iterations can wait a scheduler time slice (milliseconds for a 4 KiB step), so a median is
// then a time slice, not the link. Against relative residuals an iteration that waited that
// long counts for little: its residual is near -1 however long it waited, and it pulls t by
// about t / t_i of what a clean one does. On an idle machine t is within a few percent of the
// median; with both cores busy it stays near the clean iterations while the median does not.
//
// Latency >= 0 and bandwidth > 0 are constraints: where the unconstrained optimum has a
// negative latency, the constrained one lies on latency = 0 (the objective is a convex
// quadratic), which is the same weighted fit through the origin. One message size cannot
// separate the two, so it is fitted through the origin too, said in a note.
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate_samples.h"
#include "fob/types.h"

namespace fob::calib {

std::string fmt(double x) {
  std::ostringstream s;
  s.precision(4);
  s << x;
  return s.str();
}

namespace {

struct Line {
  double intercept = 0, slope = 0;
};

// Minimises sum(((y - a - b x) / y)^2): the weighted means first, so that the sums of
// products stay well conditioned across bytes from 1e3 to 1e9.
Line weighted_fit(const std::vector<LinkPoint>& pts) {
  double sw = 0, swx = 0, swy = 0;
  for (const LinkPoint& p : pts) {
    const double w = 1 / (p.seconds * p.seconds);
    sw += w;
    swx += w * p.bytes;
    swy += w * p.seconds;
  }
  const double mx = swx / sw, my = swy / sw;
  double sxx = 0, sxy = 0;
  for (const LinkPoint& p : pts) {
    const double w = 1 / (p.seconds * p.seconds);
    sxx += w * (p.bytes - mx) * (p.bytes - mx);
    sxy += w * (p.bytes - mx) * (p.seconds - my);
  }
  const double slope = sxy / sxx;
  return {my - slope * mx, slope};
}

// Minimises sum(((y - b x) / y)^2) over b alone: b = sum(x / y) / sum((x / y)^2).
double weighted_slope_through_origin(const std::vector<LinkPoint>& pts) {
  double s1 = 0, s2 = 0;
  for (const LinkPoint& p : pts) {
    const double r = p.bytes / p.seconds;
    s1 += r;
    s2 += r * r;
  }
  return s1 / s2;
}

}  // namespace

double relative_location(const std::vector<double>& times) {
  double s1 = 0, s2 = 0;
  for (double t : times) {
    s1 += 1 / t;
    s2 += 1 / (t * t);
  }
  return s1 / s2;
}

LinkClass fit_link(const std::vector<LinkPoint>& pts, const std::string& name,
                   std::vector<std::string>& notes) {
  LinkClass link;
  link.name = name;
  std::set<double> sizes;
  for (const LinkPoint& p : pts) {
    if (!(p.seconds > 0) || !std::isfinite(p.seconds) || !(p.bytes > 0)) {
      throw InputError("calibrate: a transfer timing of link " + name + " is not positive (" +
                       fmt(p.bytes) + " B in " + fmt(p.seconds) + " s)");
    }
    sizes.insert(p.bytes);
  }
  Line line;
  bool through_origin = sizes.size() < 2;
  if (!through_origin) {
    line = weighted_fit(pts);
    if (line.intercept < 0 || line.slope <= 0) {
      notes.push_back("link " + name + ": the weighted least-squares fit gave latency " +
                      fmt(line.intercept) + " s and " + fmt(line.slope) +
                      " s/B; refitted through the origin (latency 0) instead");
      through_origin = true;
    }
  } else if (!sizes.empty()) {
    notes.push_back("link " + name + ": only one message size (" + fmt(*sizes.begin()) +
                    " B) was measured, so latency cannot be separated from bandwidth: "
                    "bandwidth fitted through the origin, latency 0");
  }
  if (through_origin) line = {0, pts.empty() ? 0 : weighted_slope_through_origin(pts)};
  if (!(line.slope > 0) || !std::isfinite(line.slope)) {
    throw InputError("calibrate: the transfer timings give no positive bandwidth for link " + name);
  }
  link.latency_s = line.intercept;
  link.bytes_per_s = 1.0 / line.slope;
  return link;
}

}  // namespace fob::calib
