// The speedup picture: how each strategy's speedup over baseline changes along a sweep (or,
// for a file of comm_only cases only, their bus bandwidth along the message size). It reads
// only summarize()'s metrics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chart_axes.h"
#include "fob/metrics.h"
#include "fob/pictures.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "pictures_common.h"
#include "svg_writer.h"

namespace fob {
namespace {

using charts::kPalette;
using charts::kPaletteSize;
using charts::Point;
using charts::Scale;
using charts::write_title;
using charts::write_y_axis;
using svg::attr;

struct Series {
  std::string name;
  bool reference = false;  // baseline: a dashed line at 1
  bool flat = false;       // no x of its own: drawn across the whole x range
  std::vector<std::pair<Point, std::string>> points;  // (x, y), tooltip
};

// The number after ':' in a strategy spec, or the strategy's default; 0 when it takes none.
int strategy_param(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  if (colon != std::string::npos) return std::atoi(spec.c_str() + colon + 1);
  for (const Strategy* s : all_strategies()) {
    if (name == s->name) return s->param_name ? s->default_param : 0;
  }
  return 0;
}

int64_t field_value(const Summary& s, const std::string& field) {
  if (field == "world") return s.world;
  if (field == "tokens") return s.batch * s.seq;
  if (field == "seq") return s.seq;
  if (field == "batch") return s.batch;
  if (field == "hidden") return s.hidden;
  if (field == "ffn") return s.ffn;
  return s.heads;
}

// Bytes of the full tensor a comm_only case gathers or reduces (nccl-tests' "size"): what
// rank 0 sends, times N / (N - 1) for a ring.
double message_bytes(const CaseResult& c) {
  double sent = 0;
  for (int t = 0; t < c.max_tasks && static_cast<size_t>(t) < c.tasks.size(); ++t) {
    const TaskRecord& rec = c.tasks[static_cast<size_t>(t)];
    if (rec.task >= 0 && rec.stream == static_cast<int8_t>(StreamId::comm)) {
      sent += static_cast<double>(rec.bytes);
    }
  }
  return c.world > 1 ? sent * c.world / (c.world - 1) : sent;
}

// "512 B", "64 KiB", "16 MiB": message sizes are powers of two more often than not.
std::string bytes_label(double bytes) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return svg::num(bytes) + " " + units[u];
}

struct Chart {
  std::string x_label, y_label;
  std::vector<Series> series;
  std::vector<Point> ideal;  // T_baseline / T_lb where known
  bool ideal_flat = false;   // one shape: the bound is one number, drawn across the chart
};

Chart busbw_chart(const ResultFile& file, const std::vector<Summary>& all) {
  Chart chart{"message size (bytes, nccl-tests' size)", "busbw (GB/s)", {}, {}};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < all.size(); ++i) {
    const Summary& s = all[i];
    if (!s.has_role(StrategyRole::comm_reference) || !std::isfinite(s.busbw)) continue;
    const std::string name = s.strategy + " " + s.workload + " N=" + std::to_string(s.world);
    if (index.find(name) == index.end()) {
      index[name] = chart.series.size();
      chart.series.push_back({name, false, false, {}});
    }
    const double bytes = message_bytes(file.cases[i]);
    chart.series[index[name]].points.push_back({{bytes, s.busbw},
                                                name + ": " + svg::num(bytes) + " B, busbw " +
                                                    svg::num(s.busbw) + " GB/s (case " + s.case_id +
                                                    ")"});
  }
  return chart;
}

// What a speedup chart's lines are drawn along: the field the cases vary in (tokens first), or
// none (the strategies' parameter); and what else varies, which keeps lines apart.
struct SweepAxes {
  std::vector<std::string> varying;  // shape fields with more than one value
  std::string x_field;               // empty: the strategies' parameter
  bool several_workloads = false, several_dtypes = false;

  explicit SweepAxes(const std::vector<const Summary*>& shown) {
    const char* const fields[] = {"world", "tokens", "seq", "batch", "hidden", "ffn", "heads"};
    for (const char* f : fields) {
      std::set<int64_t> values;
      for (const Summary* s : shown) values.insert(field_value(*s, f));
      if (values.size() > 1) varying.emplace_back(f);
    }
    std::set<std::string> workloads, dtypes;
    for (const Summary* s : shown) {
      workloads.insert(s->workload);
      dtypes.insert(s->dtype);
    }
    several_workloads = workloads.size() > 1;
    several_dtypes = dtypes.size() > 1;
    if (std::find(varying.begin(), varying.end(), "tokens") != varying.end()) {
      x_field = "tokens";
    } else if (!varying.empty()) {
      x_field = varying.front();
    }
  }

  // The fields other than x that vary, as text: one line per value.
  std::string line_of(const Summary& s) const {
    std::string rest;
    for (const std::string& f : varying) {
      if (f != x_field && !(x_field == "tokens" && (f == "batch" || f == "seq"))) {
        rest += " " + f + "=" + std::to_string(field_value(s, f));
      }
    }
    if (several_workloads) rest += " " + s.workload;
    if (several_dtypes) rest += " " + s.dtype;
    return rest;
  }
};

// A --tune file holds every parameter of a strategy at each x: its line is the fastest of them
// at each x (the parameter the tooltip names), the choice a user would make there.
void keep_fastest(std::vector<const Summary*>& shown, const SweepAxes& axes) {
  // A strategy's point: its name (no parameter), its line and its x.
  auto point_of = [&](const Summary& s) {
    return std::make_pair(s.strategy_name() + axes.line_of(s), field_value(s, axes.x_field));
  };
  std::map<std::pair<std::string, int64_t>, const Summary*> fastest;
  for (const Summary* s : shown) {
    auto [it, added] = fastest.emplace(point_of(*s), s);
    // A time that is NaN (not simulated to the end) never hides a finite one.
    if (!added && (std::isnan(it->second->t_median) || s->t_median < it->second->t_median)) {
      it->second = s;
    }
  }
  std::erase_if(shown, [&](const Summary* s) { return fastest.at(point_of(*s)) != s; });
}

// `tuned`: a `fobench sim --tune` file (RunInfo::tuned). Any other file keeps every strategy
// as given, whose parameters the user chose to compare.
Chart speedup_chart(const std::vector<Summary>& all, bool tuned) {
  std::vector<const Summary*> shown;
  for (const Summary& s : all) {
    if (!s.is_reference()) shown.push_back(&s);
  }
  const SweepAxes axes(shown);
  const std::string& x_field = axes.x_field;
  tuned = tuned && !x_field.empty();
  if (tuned) keep_fastest(shown, axes);

  Chart chart;
  chart.ideal_flat = x_field.empty();
  chart.y_label = "speedup over baseline (T_baseline / T)";
  chart.x_label = x_field.empty()
                      ? "strategy parameter (slicing: C chunks; flash, flash_direct: m; "
                        "default where omitted)"
                      : (x_field == "tokens" ? "tokens (batch × seq)" : x_field);
  std::map<std::string, size_t> index;
  std::set<std::pair<double, double>> ideal_seen;
  for (const Summary* s : shown) {
    const std::string rest = axes.line_of(*s);
    const bool baseline = s->has_role(StrategyRole::serial_baseline);
    const std::string family = s->strategy_name();
    const int param = strategy_param(s->strategy);
    const bool flat = x_field.empty() && param == 0;
    const Strategy* def = s->definition();
    const std::string tuned_name =
        def && def->param_name ? family + " (fastest " + def->param_name + ")" : family;
    const std::string name = (x_field.empty() ? family : tuned ? tuned_name : s->strategy) + rest;
    if (index.find(name) == index.end()) {
      index[name] = chart.series.size();
      chart.series.push_back({name, baseline, flat, {}});
    }
    const double x = x_field.empty() ? param : static_cast<double>(field_value(*s, x_field));
    const double y = baseline ? 1.0 : s->speedup;
    if (!std::isfinite(y)) continue;
    chart.series[index[name]].points.push_back({{x, y},
                                                s->strategy + rest + ": speedup " + svg::num(y) +
                                                    " (T " + svg::ms(s->t_median) + " ms, case " +
                                                    s->case_id + ")"});
    if (std::isfinite(s->ideal_speedup) && ideal_seen.insert({x, s->ideal_speedup}).second) {
      chart.ideal.emplace_back(x, s->ideal_speedup);
    }
  }
  for (Series& se : chart.series) std::sort(se.points.begin(), se.points.end());
  std::sort(chart.ideal.begin(), chart.ideal.end());
  return chart;
}

// The x axis's range and kind: log2 where the values span more than 8x, one tick per integer
// for a small integer range (with half a unit of room either side, so no marker sits on an
// edge), nice numbers otherwise. Flat series take the x range of the others.
struct XAxis {
  double lo = INFINITY, hi = -INFINITY;
  bool log = false, unit_ticks = false;

  explicit XAxis(const Chart& chart) {
    bool integer_x = true;
    for (const Series& se : chart.series) {
      for (const auto& [p, tip] : se.points) {
        integer_x &= p.first == std::floor(p.first);
        if (se.flat) continue;
        lo = std::min(lo, p.first);
        hi = std::max(hi, p.first);
      }
    }
    if (!std::isfinite(lo)) lo = hi = 1;
    log = lo > 0 && hi / lo > 8;
    unit_ticks = !log && integer_x && hi - lo <= 16;
    if (log) {
      lo /= 1.25;
      hi *= 1.25;
    } else if (unit_ticks) {
      lo -= 0.5;
      hi += 0.5;
    } else if (hi == lo) {
      lo -= std::max(std::fabs(lo) * 0.5, 1.0);
      hi += std::max(std::fabs(hi) * 0.5, 1.0);
    } else {
      const double pad = (hi - lo) * 0.05;
      lo -= pad;
      hi += pad;
    }
  }

  // Powers of two on a log2 scale, integers, or nice numbers.
  std::vector<double> ticks(const Scale& x) const {
    std::vector<double> out;
    if (log) {
      const int first = static_cast<int>(std::floor(std::log2(x.lo)));
      const int last = static_cast<int>(std::ceil(std::log2(x.hi)));
      for (int e = first; e <= last; ++e) {
        const double t = std::exp2(e);
        if (t >= x.lo * 0.9999 && t <= x.hi * 1.0001) out.push_back(t);
      }
    } else if (unit_ticks) {
      const auto first = static_cast<int64_t>(std::ceil(x.lo));
      const auto last = static_cast<int64_t>(std::floor(x.hi));
      for (int64_t t = first; t <= last; ++t) out.push_back(static_cast<double>(t));
    } else {
      out = svg::nice_ticks(x.lo, x.hi, 8);
    }
    return out;
  }
};

// The y range over every point and the ideal line.
std::pair<double, double> y_range(const Chart& chart, bool only_comm) {
  double lo = only_comm ? 0 : 1, hi = 1;
  for (const Series& se : chart.series) {
    for (const auto& [p, tip] : se.points) {
      lo = std::min(lo, p.second);
      hi = std::max(hi, p.second);
    }
  }
  for (const Point& p : chart.ideal) hi = std::max(hi, p.second);
  return {lo, hi};
}

void draw_x_axis(svg::Document& doc, const Chart& chart, const XAxis& axis, const Scale& x,
                 double top, double plot_h, bool only_comm) {
  doc.open("g", " class=\"axis\"");
  const std::vector<double> ticks = axis.ticks(x);
  const double step = !axis.log && ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (double t : ticks) {
    if (t < x.lo - 1e-9 || t > x.hi + 1e-9) continue;
    doc.line(x(t), top, x(t), top + plot_h, " class=\"grid\" stroke=\"#eeeeee\"");
    doc.text(x(t), top + plot_h + 18, only_comm ? bytes_label(t) : svg::tick_label(t, step),
             " text-anchor=\"middle\"");
  }
  doc.line(x.from, top + plot_h, x.to, top + plot_h, " stroke=\"black\"");
  doc.text((x.from + x.to) / 2, top + plot_h + 42,
           chart.x_label + (axis.log ? " — log2 scale" : ""), " text-anchor=\"middle\"");
  doc.close("g");
}

void draw_ideal(svg::Document& doc, const Chart& chart, const Scale& x, const Scale& y) {
  if (chart.ideal.empty()) return;
  std::vector<Point> pts;
  if (chart.ideal_flat) {
    pts = {{x.from, y(chart.ideal.front().second)}, {x.to, y(chart.ideal.front().second)}};
  } else {
    for (const Point& p : chart.ideal) pts.emplace_back(x(p.first), y(p.second));
  }
  doc.polyline(pts,
               " class=\"ideal\" stroke=\"#888888\" stroke-width=\"1.5\""
               " stroke-dasharray=\"2 4\"",
               "ideal speedup T_baseline / T_lb");
}

// Every series with its markers, and its legend entry at (legend_x, legend_y), which moves on.
// Returns whether any point was drawn.
bool draw_series(svg::Document& doc, const Chart& chart, const Scale& x, const Scale& y,
                 double legend_x, double& legend_y) {
  size_t colour = 0;
  bool any_point = false;
  for (const Series& se : chart.series) {
    if (se.points.empty()) continue;
    any_point = true;
    const std::string stroke = se.reference ? "#555555" : kPalette[colour++ % kPaletteSize];
    const std::string dash = se.reference || se.flat ? " stroke-dasharray=\"7 4\"" : "";
    doc.open("g", attr("class", se.reference ? "series reference" : "series") +
                      attr("data-strategy", se.name));
    std::vector<Point> pts;
    if (se.flat) {
      pts = {{x.from, y(se.points.front().first.second)},
             {x.to, y(se.points.front().first.second)}};
    } else {
      for (const auto& [p, tip] : se.points) pts.emplace_back(x(p.first), y(p.second));
    }
    doc.polyline(pts, " class=\"trace\"" + attr("stroke", stroke) + " stroke-width=\"2\"" + dash,
                 se.name);
    for (size_t i = 0; i < se.points.size(); ++i) {
      const auto& [p, tip] = se.points[i];
      const double px = se.flat ? x.from + 6 + 10 * static_cast<double>(i) : x(p.first);
      doc.circle(px, y(p.second), 4, " class=\"marker\"" + attr("fill", stroke), tip);
    }
    doc.close("g");
    doc.line(legend_x, legend_y - 4, legend_x + 22, legend_y - 4,
             attr("stroke", stroke) + " stroke-width=\"2\"" + dash);
    doc.circle(legend_x + 11, legend_y - 4, 3.5, attr("fill", stroke));
    doc.text(legend_x + 30, legend_y, se.name + (se.flat ? " (takes no parameter)" : ""));
    legend_y += 20;
  }
  return any_point;
}

}  // namespace

void write_speedup_svg(std::ostream& out, const ResultFile& file) {
  const std::vector<Summary> all = summarize(file);
  const bool only_comm = !all.empty() && std::all_of(all.begin(), all.end(), [](const Summary& s) {
    return s.has_role(StrategyRole::comm_reference);
  });
  const Chart chart = only_comm ? busbw_chart(file, all) : speedup_chart(all, file.run.tuned);
  const XAxis axis(chart);
  const auto [y_lo, y_hi] = y_range(chart, only_comm);

  const double left = 90, top = 70, plot_w = 640, plot_h = 380, legend_w = 300;
  const double width = left + plot_w + legend_w, height = top + plot_h + 80;
  // Speedups cluster near 1, so the axis starts below the lowest value rather than at 0.
  const double pad = (y_hi - y_lo) * 0.08 + 0.02;
  const Scale y{only_comm ? 0 : std::max(0.0, y_lo - pad), y_hi + pad, top + plot_h, top};
  const Scale x{axis.lo, axis.hi, left, left + plot_w, axis.log};

  svg::Document doc(out, width, height);
  write_title(doc, left,
              only_comm ? "Bus bandwidth of comm_only along the sweep"
                        : "Speedup over baseline along the sweep",
              file);
  write_y_axis(doc, y, left, left + plot_w, chart.y_label);
  draw_x_axis(doc, chart, axis, x, top, plot_h, only_comm);
  draw_ideal(doc, chart, x, y);
  double legend_y = top + 10;
  const double legend_x = left + plot_w + 30;
  const bool any_point = draw_series(doc, chart, x, y, legend_x, legend_y);
  if (!chart.ideal.empty()) {
    doc.line(legend_x, legend_y - 4, legend_x + 22, legend_y - 4,
             " stroke=\"#888888\" stroke-width=\"1.5\" stroke-dasharray=\"2 4\"");
    doc.text(legend_x + 30, legend_y, "ideal: T_baseline / T_lb");
  }
  if (!any_point) {
    doc.text(left + 20, top + 30,
             only_comm ? "no comm_only case with more than one rank: busbw is undefined"
                       : "no baseline case of these shapes: speedup is undefined");
  }
  doc.finish();
}

}  // namespace fob
