// The two summary pictures: where each case's step time goes (breakdown), and how the
// strategies' speedups change along a sweep (speedup). Both read only summarize()'s metrics.
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

#include "fob/metrics.h"
#include "fob/pictures.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "pictures_common.h"
#include "svg_writer.h"

namespace fob {
namespace {

using svg::attr;
using Point = std::pair<double, double>;

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948",
                                "#76b7b2", "#ff9da7", "#9c755f", "#e15759", "#bab0ac"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

// The cases of one shape: every strategy's key names the shape with its own strategy.
CaseKey shape_key(const Summary& s) {
  return s.key().with_strategy("");
}

// A linear or log2 map from data to pixels.
struct Scale {
  double lo = 0, hi = 1;    // data
  double from = 0, to = 1;  // pixels
  bool log2 = false;
  double operator()(double v) const {
    const double a = log2 ? std::log2(lo) : lo;
    const double b = log2 ? std::log2(hi) : hi;
    const double t = log2 ? std::log2(v) : v;
    return b == a ? (from + to) / 2 : from + (to - from) * (t - a) / (b - a);
  }
};

void write_title(svg::Document& doc, double x, const std::string& title, const ResultFile& file) {
  doc.text(x, 24, title, " font-size=\"16\" font-weight=\"bold\"");
  const std::string note = pictures::emulated_note(file.system);
  if (!note.empty()) {
    doc.text(x, 44, note, " class=\"emulated\" fill=\"#c00000\" font-weight=\"bold\"");
  }
}

// Horizontal gridlines and labels of a value axis.
void write_y_axis(svg::Document& doc, const Scale& y, double left, double right,
                  const std::string& label) {
  const std::vector<double> ticks = svg::nice_ticks(y.lo, y.hi, 6);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  doc.open("g", " class=\"axis\"");
  for (double t : ticks) {
    if (t < y.lo - 1e-12 || t > y.hi + 1e-12) continue;
    doc.line(left, y(t), right, y(t), " class=\"grid\" stroke=\"#e4e4e4\"");
    doc.text(left - 6, y(t) + 4, svg::tick_label(t, step), " text-anchor=\"end\"");
  }
  doc.line(left, y.from, left, y.to, " stroke=\"black\"");
  const double mid = (y.from + y.to) / 2;
  doc.text(left - 48, mid, label,
           " text-anchor=\"middle\"" +
               attr("transform", "rotate(-90 " + svg::num(left - 48) + " " + svg::num(mid) + ")"));
  doc.close("g");
}

// ---- breakdown ----------------------------------------------------------------------------

constexpr double kBarWidth = 34;
constexpr double kBarGap = 14;
constexpr double kGroupGap = 48;
constexpr const char* kConcurrencyColour = "#7b3294";

struct Segment {
  const char* name;
  const char* css;
  const char* colour;
  double value;
};

// compute_only is kept as a single T_comp bar: it is the floor the other bars' lowest segment
// is measured against, so seeing it next to them helps. comm_only has no T_comp share and is
// left out.
std::vector<Segment> segments(const Summary& s) {
  if (s.has_role(StrategyRole::compute_reference)) {
    return {{"T_comp", "seg-comp", "#4e79a7", s.t_median}};
  }
  if (!std::isfinite(s.t_comp)) {
    return {{"T (no compute_only case to split it)", "seg-total", "#bab0ac", s.t_median}};
  }
  const double penalty = std::isfinite(s.slicing_penalty) ? std::max(s.slicing_penalty, 0.0) : 0;
  const double exposed = std::max(s.t_median - s.t_comp - penalty, 0.0);
  return {{"T_comp", "seg-comp", "#4e79a7", s.t_comp},
          {"slicing penalty", "seg-penalty", "#edc948", penalty},
          {"exposed communication", "seg-exposed", "#e15759", exposed}};
}

}  // namespace

void write_breakdown_svg(std::ostream& out, const ResultFile& file) {
  const std::vector<Summary> all = summarize(file);
  std::vector<CaseKey> order;
  std::map<CaseKey, std::vector<const Summary*>> groups;
  for (const Summary& s : all) {
    if (s.has_role(StrategyRole::comm_reference)) continue;
    const CaseKey key = shape_key(s);
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(&s);
  }

  double top_value = 0;
  size_t bars = 0;
  for (const auto& [key, list] : groups) {
    for (const Summary* s : list) {
      double total = 0;
      for (const Segment& seg : segments(*s)) total += std::isfinite(seg.value) ? seg.value : 0;
      top_value = std::max({top_value, total, std::isfinite(s->t_lb) ? s->t_lb : 0});
      ++bars;
    }
  }
  if (top_value <= 0) top_value = 1e-3;

  const double left = 80, plot_top = 90, plot_h = 340, legend_w = 250;
  const double right =
      left + std::max(400.0, 40 + static_cast<double>(bars) * (kBarWidth + kBarGap) +
                                 static_cast<double>(order.size()) * kGroupGap);
  // Wide enough for the title and the emulated-link line above the plot.
  const double width = std::max(right + legend_w, 1000.0);
  const double height = plot_top + plot_h + 130;
  Scale y{0, top_value * 1.1, plot_top + plot_h, plot_top};
  const std::vector<double> ticks = svg::nice_ticks(0, y.hi * 1e3, 6);
  if (!ticks.empty()) y.hi = std::max(y.hi, ticks.back() / 1e3);
  Scale y_ms = y;  // the axis is labelled in ms
  y_ms.lo *= 1e3;
  y_ms.hi *= 1e3;

  svg::Document doc(out, width, height);
  write_title(doc, left, "Where the step time goes (median step, slowest rank)", file);
  write_y_axis(doc, y_ms, left, right, "time (ms)");
  if (groups.empty()) {
    doc.text(left + 20, plot_top + 40, "no cases to show (comm_only cases are not drawn)");
  }

  double x = left + 30;
  for (const CaseKey& key : order) {
    const std::vector<const Summary*>& list = groups[key];
    const double group_left = x;
    doc.open("g", attr("class", "shape-group"));
    for (const Summary* s : list) {
      doc.open("g", attr("class", "bar-group") + attr("data-case", s->case_id) +
                        attr("data-strategy", s->strategy));
      double base = 0;
      for (const Segment& seg : segments(*s)) {
        const double v = std::isfinite(seg.value) ? seg.value : 0;
        doc.rect(x, y(base + v), kBarWidth, y(base) - y(base + v),
                 attr("class", std::string("bar ") + seg.css) + attr("data-case", s->case_id) +
                     attr("fill", seg.colour),
                 s->strategy + " (case " + s->case_id + "): " + seg.name + " " + svg::ms(v) +
                     " ms; T " + svg::ms(s->t_median) + " ms");
        base += v;
      }
      doc.text(x + kBarWidth / 2, y(base) - 4, svg::ms(s->t_median),
               " text-anchor=\"middle\""
               " font-size=\"10\"");
      // The bar shows the time the schedule left exposed; the concurrency says how much of the
      // communication really ran beside compute, which the two can disagree on.
      if (std::isfinite(s->concurrency)) {
        doc.text(x + kBarWidth / 2, y(base) - 16, svg::num(std::round(s->concurrency * 100)) + "%",
                 " class=\"concurrency\" text-anchor=\"middle\" font-size=\"10\"" +
                     attr("fill", kConcurrencyColour) + attr("data-case", s->case_id));
      }
      const double lx = x + kBarWidth / 2;
      const double ly = y.from + 12;
      doc.text(lx, ly, s->strategy,
               " class=\"bar-label\" text-anchor=\"end\"" +
                   attr("transform", "rotate(-40 " + svg::num(lx) + " " + svg::num(ly) + ")"));
      doc.close("g");
      x += kBarWidth + kBarGap;
    }
    const double group_right = x - kBarGap;
    const Summary& first = *list.front();
    if (std::isfinite(first.t_lb)) {
      doc.line(group_left - 6, y(first.t_lb), group_right + 6, y(first.t_lb),
               " class=\"tlb\" stroke=\"black\" stroke-width=\"2\" stroke-dasharray=\"6 3\"",
               "T_lb = max(T_comp, T_comm) = " + svg::ms(first.t_lb) + " ms");
      doc.text(group_right + 8, y(first.t_lb) + 4, "T_lb", " font-size=\"10\"");
    }
    doc.text((group_left + group_right) / 2, y.from + 95, pictures::shape_text(first),
             " class=\"shape-label\" text-anchor=\"middle\" font-size=\"11\"");
    doc.close("g");
    x += kGroupGap;
  }
  doc.line(left, y.from, right, y.from, " stroke=\"black\"");

  // Legend.
  double ly = plot_top + 10;
  const double lx = right + 20;
  const Segment legend[] = {{"T_comp (compute_only's T)", "", "#4e79a7", 0},
                            {"slicing penalty (≥ 0)", "", "#edc948", 0},
                            {"exposed communication", "", "#e15759", 0}};
  for (const Segment& seg : legend) {
    doc.rect(lx, ly - 10, 14, 12, attr("fill", seg.colour));
    doc.text(lx + 20, ly, seg.name);
    ly += 20;
  }
  doc.line(lx, ly - 4, lx + 14, ly - 4,
           " stroke=\"black\" stroke-width=\"2\""
           " stroke-dasharray=\"6 3\"");
  doc.text(lx + 20, ly, "T_lb = max(T_comp, T_comm)");
  doc.text(lx, ly + 24, "label on a bar: T (ms)", " font-size=\"10\"");
  doc.text(lx, ly + 40, "above it: concurrency, % of comm time",
           " font-size=\"10\"" + attr("fill", kConcurrencyColour));
  doc.text(lx, ly + 54, "during which the rank also computed",
           " font-size=\"10\"" + attr("fill", kConcurrencyColour));
  doc.finish();
}

// ---- speedup ------------------------------------------------------------------------------

namespace {

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

// `tuned`: a `fobench sim --tune` file (RunInfo::tuned).
Chart speedup_chart(const std::vector<Summary>& all, bool tuned) {
  std::vector<const Summary*> shown;
  for (const Summary& s : all) {
    if (!s.is_reference()) shown.push_back(&s);
  }
  const char* const fields[] = {"world", "tokens", "seq", "batch", "hidden", "ffn", "heads"};
  std::vector<std::string> varying;
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

  std::string x_field;  // empty: the strategies' parameter
  if (std::find(varying.begin(), varying.end(), "tokens") != varying.end()) {
    x_field = "tokens";
  } else if (!varying.empty()) {
    x_field = varying.front();
  }

  // A --tune file holds every parameter of a strategy at each x: its line is the fastest of
  // them at each x (the parameter the tooltip names), the choice a user would make there. Any
  // other file keeps every strategy as given, whose parameters the user chose to compare.
  auto line_of = [&](const Summary& s) {
    std::string rest;
    for (const std::string& f : varying) {
      if (f != x_field && !(x_field == "tokens" && (f == "batch" || f == "seq"))) {
        rest += " " + f + "=" + std::to_string(field_value(s, f));
      }
    }
    if (workloads.size() > 1) rest += " " + s.workload;
    if (dtypes.size() > 1) rest += " " + s.dtype;
    return rest;
  };
  tuned = tuned && !x_field.empty();
  if (tuned) {
    // A strategy's point: its name (no parameter), its line and its x.
    auto point_of = [&](const Summary& s) {
      return std::make_pair(s.strategy_name() + line_of(s), field_value(s, x_field));
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
    // Fields other than x that vary keep their cases apart: one line per value.
    const std::string rest = line_of(*s);
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

}  // namespace

void write_speedup_svg(std::ostream& out, const ResultFile& file) {
  const std::vector<Summary> all = summarize(file);
  const bool only_comm = !all.empty() && std::all_of(all.begin(), all.end(), [](const Summary& s) {
    return s.has_role(StrategyRole::comm_reference);
  });
  const Chart chart = only_comm ? busbw_chart(file, all) : speedup_chart(all, file.run.tuned);

  // Ranges over everything drawn; flat series take the x range of the others.
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = only_comm ? 0 : 1, y_hi = 1;
  for (const Series& se : chart.series) {
    for (const auto& [p, tip] : se.points) {
      if (!se.flat) {
        x_lo = std::min(x_lo, p.first);
        x_hi = std::max(x_hi, p.first);
      }
      y_lo = std::min(y_lo, p.second);
      y_hi = std::max(y_hi, p.second);
    }
  }
  for (const Point& p : chart.ideal) y_hi = std::max(y_hi, p.second);
  if (!std::isfinite(x_lo)) x_lo = x_hi = 1;
  const bool log_x = x_lo > 0 && x_hi / x_lo > 8;
  // Slice counts and shape fields are integers: a small integer range gets one tick per
  // integer and half a unit of room either side, so no marker sits on an edge.
  bool integer_x = true;
  for (const Series& se : chart.series) {
    for (const auto& [p, tip] : se.points) integer_x &= p.first == std::floor(p.first);
  }
  const bool unit_ticks = !log_x && integer_x && x_hi - x_lo <= 16;
  if (log_x) {
    x_lo /= 1.25;
    x_hi *= 1.25;
  } else if (unit_ticks) {
    x_lo -= 0.5;
    x_hi += 0.5;
  } else if (x_hi == x_lo) {
    x_lo -= std::max(std::fabs(x_lo) * 0.5, 1.0);
    x_hi += std::max(std::fabs(x_hi) * 0.5, 1.0);
  } else {
    const double pad = (x_hi - x_lo) * 0.05;
    x_lo -= pad;
    x_hi += pad;
  }

  const double left = 90, top = 70, plot_w = 640, plot_h = 380, legend_w = 300;
  const double width = left + plot_w + legend_w, height = top + plot_h + 80;
  // Speedups cluster near 1, so the axis starts below the lowest value rather than at 0.
  const double pad = (y_hi - y_lo) * 0.08 + 0.02;
  const Scale y{only_comm ? 0 : std::max(0.0, y_lo - pad), y_hi + pad, top + plot_h, top};
  const Scale x{x_lo, x_hi, left, left + plot_w, log_x};

  svg::Document doc(out, width, height);
  write_title(doc, left,
              only_comm ? "Bus bandwidth of comm_only along the sweep"
                        : "Speedup over baseline along the sweep",
              file);
  write_y_axis(doc, y, left, left + plot_w, chart.y_label);

  // x axis: powers of two on a log2 scale, nice numbers otherwise.
  doc.open("g", " class=\"axis\"");
  std::vector<double> ticks;
  if (log_x) {
    const int first = static_cast<int>(std::floor(std::log2(x.lo)));
    const int last = static_cast<int>(std::ceil(std::log2(x.hi)));
    for (int e = first; e <= last; ++e) {
      const double t = std::exp2(e);
      if (t >= x.lo * 0.9999 && t <= x.hi * 1.0001) ticks.push_back(t);
    }
  } else if (unit_ticks) {
    const auto first = static_cast<int64_t>(std::ceil(x.lo));
    const auto last = static_cast<int64_t>(std::floor(x.hi));
    for (int64_t t = first; t <= last; ++t) ticks.push_back(static_cast<double>(t));
  } else {
    ticks = svg::nice_ticks(x.lo, x.hi, 8);
  }
  const double step = !log_x && ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (double t : ticks) {
    if (t < x.lo - 1e-9 || t > x.hi + 1e-9) continue;
    doc.line(x(t), top, x(t), top + plot_h, " class=\"grid\" stroke=\"#eeeeee\"");
    doc.text(x(t), top + plot_h + 18, only_comm ? bytes_label(t) : svg::tick_label(t, step),
             " text-anchor=\"middle\"");
  }
  doc.line(left, top + plot_h, left + plot_w, top + plot_h, " stroke=\"black\"");
  doc.text(left + plot_w / 2, top + plot_h + 42, chart.x_label + (log_x ? " — log2 scale" : ""),
           " text-anchor=\"middle\"");
  doc.close("g");

  if (!chart.ideal.empty()) {
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

  size_t colour = 0;
  bool any_point = false;
  double legend_y = top + 10;
  const double legend_x = left + plot_w + 30;
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
