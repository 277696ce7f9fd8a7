// The speedup picture: how each strategy's speedup over baseline changes along a sweep (or,
// for a file of comm_only cases only, their bus bandwidth along the message size). It draws
// what speedup_model.h computes from summarize()'s rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "chart_axes.h"
#include "fob/metrics.h"
#include "fob/pictures.h"
#include "picture_layout.h"
#include "speedup_model.h"
#include "svg_writer.h"

namespace fob {
namespace {

using charts::Scale;
using charts::write_y_axis;
using pictures::text_width;
using speedup::Chart;
using speedup::Mark;
using speedup::Point;
using speedup::Series;
using svg::attr;

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

// The x axis's range and kind: log2 where the values span more than 8x, one tick per integer
// for a small integer range (with half a unit of room either side, so no marker sits on an
// edge), nice numbers otherwise. Flat series take the x range of the others.
struct XAxis {
  double lo = INFINITY, hi = -INFINITY;
  bool log = false, unit_ticks = false;

  explicit XAxis(const Chart& chart) {
    bool integer_x = true;
    for (const Series& se : chart.series) {
      for (const Mark& m : se.marks) {
        const Point& p = m.at;
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

// Where a series' i-th marker is drawn: at its x, or, for a flat series, in a row at the
// plot's left edge.
double marker_x(const Series& se, size_t i, const Scale& x) {
  return se.flat ? x.from + 6 + 10 * static_cast<double>(i) : x(se.marks[i].at.first);
}

// The y range over every point and the ideal line.
std::pair<double, double> y_range(const Chart& chart) {
  double lo = chart.bytes_axis ? 0 : 1, hi = 1;
  for (const Series& se : chart.series) {
    for (const Mark& m : se.marks) {
      lo = std::min(lo, m.at.second);
      hi = std::max(hi, m.at.second);
    }
  }
  for (const auto& line : chart.ideal) {
    for (const Point& p : line) hi = std::max(hi, p.second);
  }
  return {lo, hi};
}

void draw_x_axis(svg::Document& doc, const Chart& chart, const XAxis& axis, const Scale& x,
                 double top, double plot_h) {
  doc.open("g", " class=\"axis\"");
  const std::vector<double> ticks = axis.ticks(x);
  const double step = !axis.log && ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  // Labels that would collide are thinned: every k-th tick keeps its label.
  double widest = 0;
  for (double t : ticks) {
    widest = std::max(widest,
                      text_width(chart.bytes_axis ? bytes_label(t) : svg::tick_label(t, step), 12));
  }
  const double spacing = ticks.size() > 1 ? std::fabs(x(ticks[1]) - x(ticks[0])) : 1e9;
  const size_t every = static_cast<size_t>(std::ceil((widest + 6) / std::max(spacing, 1.0)));
  for (size_t i = 0; i < ticks.size(); ++i) {
    const double t = ticks[i];
    if (t < x.lo - 1e-9 || t > x.hi + 1e-9) continue;
    doc.line(x(t), top, x(t), top + plot_h, " class=\"grid\" stroke=\"#eeeeee\"");
    if (i % std::max<size_t>(every, 1) != 0) continue;
    doc.text(x(t), top + plot_h + 18, chart.bytes_axis ? bytes_label(t) : svg::tick_label(t, step),
             " text-anchor=\"middle\"");
  }
  doc.line(x.from, top + plot_h, x.to, top + plot_h, " stroke=\"black\"");
  doc.text((x.from + x.to) / 2, top + plot_h + 42,
           chart.x_label + (axis.log ? " — log2 scale" : ""), " text-anchor=\"middle\"");
  doc.close("g");
}

void draw_ideal(svg::Document& doc, const Chart& chart, const Scale& x, const Scale& y) {
  for (const std::vector<Point>& line : chart.ideal) {
    if (line.empty()) continue;
    std::vector<Point> pts;
    if (chart.ideal_flat) {
      pts = {{x.from, y(line.front().second)}, {x.to, y(line.front().second)}};
    } else {
      for (const Point& p : line) pts.emplace_back(x(p.first), y(p.second));
    }
    doc.polyline(pts,
                 " class=\"ideal\" data-mark=\"ideal\" stroke=\"#888888\" stroke-width=\"1.5\""
                 " stroke-dasharray=\"2 4\"",
                 "ideal speedup T_baseline / T_lb");
  }
}

// Where the notes beside points go: each tries spots around its point and takes the first
// that overlaps no marker and no note placed before it, within the plot.
class NotePlacer {
 public:
  struct Box {
    double x0, y0, x1, y1;
    bool hits(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  };
  NotePlacer(const Box& plot, std::vector<Box> markers) : plot_(plot), taken_(std::move(markers)) {}

  // The box of a note of width w and height h beside (px, py): on rings of sixteen spots
  // around the point, nearest first; the first that is free, else the least crowded.
  Box place(double px, double py, double w, double h) {
    Box best{};
    double best_cost = INFINITY;
    for (int ring = 0; ring < kRings && best_cost >= 1e3; ++ring) {
      const double d = 5 + 6 * ring;
      for (int k = 0; k < 16; ++k) {
        const double a = k * M_PI / 8;
        const double cx = px + std::cos(a) * (d + w / 2), cy = py - std::sin(a) * (d + h / 2);
        const Box b{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
        double cost = ring;
        if (b.x0 < plot_.x0 || b.x1 > plot_.x1 || b.y0 < plot_.y0 || b.y1 > plot_.y1) cost += 1e4;
        for (const Box& t : taken_) cost += t.hits(b) ? 1e3 : 0;
        if (cost < best_cost) {
          best_cost = cost;
          best = b;
        }
      }
    }
    taken_.push_back(best);
    return best;
  }

 private:
  static constexpr int kRings = 12;
  Box plot_;
  std::vector<Box> taken_;
};

// A series' polyline (dashed for the baseline and a strategy that takes no parameter) and its
// markers.
void draw_trace(svg::Document& doc, const Series& se, const std::string& key,
                const std::string& colour, const Scale& x, const Scale& y) {
  const std::string dash = se.reference || se.flat ? " stroke-dasharray=\"7 4\"" : "";
  doc.open("g", attr("class", se.reference ? "series reference" : "series") +
                    attr("data-strategy", se.name));
  std::vector<Point> pts;
  if (se.flat) {
    pts = {{x.from, y(se.marks.front().at.second)}, {x.to, y(se.marks.front().at.second)}};
  } else {
    for (const Mark& m : se.marks) pts.emplace_back(x(m.at.first), y(m.at.second));
  }
  doc.polyline(pts,
               " class=\"trace\"" + attr("data-mark", key) + attr("stroke", colour) +
                   " stroke-width=\"2\"" + dash,
               se.name);
  for (size_t i = 0; i < se.marks.size(); ++i) {
    const Mark& m = se.marks[i];
    doc.circle(marker_x(se, i, x), y(m.at.second), 4,
               " class=\"marker\"" + attr("data-mark", key) + attr("fill", colour), m.tip);
  }
  doc.close("g");
}

// The notes beside the points of a --tune chart.
void draw_notes(svg::Document& doc, const Chart& chart, const Scale& x, const Scale& y) {
  std::vector<NotePlacer::Box> markers;
  for (const Series& se : chart.series) {
    for (size_t i = 0; i < se.marks.size(); ++i) {
      const double px = marker_x(se, i, x), py = y(se.marks[i].at.second);
      markers.push_back({px - 5, py - 5, px + 5, py + 5});
    }
  }
  NotePlacer placer({x.from, y.to, x.to, y.from}, markers);
  for (const Series& se : chart.series) {
    for (size_t i = 0; i < se.marks.size(); ++i) {
      const Mark& m = se.marks[i];
      if (m.note.empty()) continue;
      const double px = marker_x(se, i, x), py = y(m.at.second);
      const NotePlacer::Box b = placer.place(px, py, text_width(m.note, 10), 12);
      // A note set apart from its point is tied to it.
      const double cx = (b.x0 + b.x1) / 2, cy = (b.y0 + b.y1) / 2;
      if (std::hypot(cx - px, cy - py) > 24) {
        doc.line(px, py, std::clamp(px, b.x0, b.x1), std::clamp(py, b.y0, b.y1),
                 " class=\"tune-leader\" data-mark=\"tune-note\" stroke=\"#999999\""
                 " stroke-width=\"0.6\"");
      }
      doc.text(b.x0, b.y1 - 2, m.note,
               " class=\"tune-note\" data-mark=\"tune-note\" font-size=\"10\"");
    }
  }
}

// Each series' colour, by its name across the panels: one name, one colour; baseline grey.
class Colours {
 public:
  explicit Colours(const std::vector<Chart>& charts) {
    for (const Chart& chart : charts) {
      for (const Series& se : chart.series) {
        if (se.marks.empty() || colour_.count(se.name)) continue;
        colour_[se.name] = se.reference ? "#555555" : charts::series_colour(next_++);
        order_.push_back(&se);
      }
    }
  }
  const std::string& of(const Series& se) const { return colour_.at(se.name); }
  std::string key(const Series& se) const { return "series-" + of(se).substr(1); }
  const std::vector<const Series*>& order() const { return order_; }

 private:
  std::map<std::string, std::string> colour_;
  std::vector<const Series*> order_;
  size_t next_ = 0;
};

pictures::Legend speedup_legend(const std::vector<Chart>& charts, const Colours& colours) {
  using pictures::Legend;
  Legend legend(1e9, true);
  bool notes = false, ideal = false;
  for (const Series* se : colours.order()) {
    const std::string& c = colours.of(*se);
    const std::string dash = se->reference || se->flat ? " stroke-dasharray=\"7 4\"" : "";
    legend.add(colours.key(*se), Legend::Swatch::line_dot,
               attr("stroke", c) + " stroke-width=\"2\"" + dash,
               se->name + (se->flat ? " (takes no parameter)" : ""), attr("fill", c));
  }
  for (const Chart& chart : charts) {
    for (const Series& se : chart.series) {
      for (const Mark& m : se.marks) notes |= !m.note.empty();
    }
    for (const auto& line : chart.ideal) ideal |= !line.empty();
  }
  if (ideal) {
    legend.add("ideal", Legend::Swatch::line,
               " stroke=\"#888888\" stroke-width=\"1.5\" stroke-dasharray=\"2 4\"",
               "ideal: T_baseline / T_lb");
  }
  if (notes) {
    legend.add("tune-note", Legend::Swatch::none, " font-size=\"11\"",
               "C=4, m=2 beside a point: the fastest parameter there");
  }
  return legend;
}

constexpr double kLeft = 90, kPlotWidth = 640;

// What a panel takes above its plot: its title (several panels only) and notes.
double panel_head(const Chart& chart, bool titled, double width) {
  double h = titled ? 22 : 0;
  for (const std::string& n : chart.notes) {
    h += 18 * static_cast<double>(pictures::wrap(n, width, 12).size());
  }
  return h + 16;
}

// One panel from `top` on; returns where the next begins.
double draw_panel(svg::Document& doc, const Chart& chart, const Colours& colours, bool titled,
                  double top, double plot_h, double width) {
  if (titled) {
    top += 16;
    doc.text(kLeft, top, chart.title,
             " class=\"panel-title\" font-size=\"13\" font-weight=\"bold\"");
    top += 6;
  }
  for (const std::string& n : chart.notes) {
    for (const std::string& line : pictures::wrap(n, width, 12)) {
      top += 18;
      doc.text(kLeft, top, line, " class=\"subtitle\"");
    }
  }
  top += 16;
  const XAxis axis(chart);
  const auto [y_lo, y_hi] = y_range(chart);
  // Speedups cluster near 1, so the axis starts below the lowest value rather than at 0.
  const double pad = (y_hi - y_lo) * 0.08 + 0.02;
  const Scale y{chart.bytes_axis ? 0 : std::max(0.0, y_lo - pad), y_hi + pad, top + plot_h, top};
  const Scale x{axis.lo, axis.hi, kLeft, kLeft + kPlotWidth, axis.log};
  write_y_axis(doc, y, kLeft, kLeft + kPlotWidth, chart.y_label);
  draw_x_axis(doc, chart, axis, x, top, plot_h);
  draw_ideal(doc, chart, x, y);
  bool any_point = false;
  for (const Series& se : chart.series) {
    if (se.marks.empty()) continue;
    any_point = true;
    draw_trace(doc, se, colours.key(se), colours.of(se), x, y);
  }
  draw_notes(doc, chart, x, y);
  if (!any_point) {
    doc.text(kLeft + 20, top + 30,
             chart.bytes_axis ? "no comm_only case with more than one rank: busbw is undefined"
                              : "no baseline case of these shapes: speedup is undefined");
  }
  return top + plot_h + 60;
}

}  // namespace

void write_speedup_svg(std::ostream& out, const ResultFile& file, const std::string& x_field) {
  const std::vector<Summary> all = summarize(file);
  const std::vector<Chart> charts = speedup::make_charts(file, all, x_field);
  const Colours colours(charts);
  const pictures::Legend legend = speedup_legend(charts, colours);
  const bool titled = charts.size() > 1;
  const double plot_h = titled ? 300 : 380;
  const std::string title =
      charts.front().bytes_axis ? charts.front().title : "Speedup over baseline along the sweep";
  const double width = kLeft + kPlotWidth + 30 + std::max(legend.widest(), 200.0) + 10;
  const double text_w = width - kLeft - 10;
  const double top = pictures::header_height(text_w, title, {}, file.system);
  double panels_h = 0;
  for (const Chart& c : charts) panels_h += panel_head(c, titled, kPlotWidth) + plot_h + 60;
  const std::vector<std::string> caption = pictures::caption_lines(file.system, {}, width - 20);
  const double caption_top = top + std::max(panels_h, legend.height() + 10) + 10;
  const double height =
      caption_top + pictures::kCaptionLine * static_cast<double>(caption.size()) + 4;

  svg::Document doc(out, width, height);
  pictures::write_header(doc, kLeft, text_w, title, {}, file.system);
  double y = top;
  for (const Chart& c : charts) y = draw_panel(doc, c, colours, titled, y, plot_h, kPlotWidth);
  legend.write(doc, kLeft + kPlotWidth + 30,
               top + panel_head(charts.front(), titled, kPlotWidth) + 10);
  pictures::write_caption(doc, 10, caption_top, caption);
  doc.finish();
}

}  // namespace fob
