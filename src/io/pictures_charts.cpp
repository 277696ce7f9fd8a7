// The breakdown picture: where each case's step time goes, against its shape's T_lb. It reads
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

using charts::Scale;
using charts::write_title;
using charts::write_y_axis;
using svg::attr;

// The cases of one shape: every strategy's key names the shape with its own strategy.
CaseKey shape_key(const Summary& s) {
  return s.key().with_strategy("");
}

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

// The cases to draw, grouped by shape in the order they first appear; comm_only is left out.
struct ShapeGroups {
  std::vector<CaseKey> order;
  std::map<CaseKey, std::vector<const Summary*>> groups;
  size_t bars = 0;
  double top_value = 0;  // the tallest bar or T_lb

  explicit ShapeGroups(const std::vector<Summary>& all) {
    for (const Summary& s : all) {
      if (s.has_role(StrategyRole::comm_reference)) continue;
      const CaseKey key = shape_key(s);
      if (groups.find(key) == groups.end()) order.push_back(key);
      groups[key].push_back(&s);
    }
    for (const auto& [key, list] : groups) {
      for (const Summary* s : list) {
        double total = 0;
        for (const Segment& seg : segments(*s)) total += std::isfinite(seg.value) ? seg.value : 0;
        top_value = std::max({top_value, total, std::isfinite(s->t_lb) ? s->t_lb : 0});
        ++bars;
      }
    }
    if (top_value <= 0) top_value = 1e-3;
  }
};

// One case's stacked bar at x, labelled with T, its concurrency and its strategy.
void draw_bar(svg::Document& doc, const Summary& s, double x, const Scale& y) {
  doc.open("g", attr("class", "bar-group") + attr("data-case", s.case_id) +
                    attr("data-strategy", s.strategy));
  double base = 0;
  for (const Segment& seg : segments(s)) {
    const double v = std::isfinite(seg.value) ? seg.value : 0;
    doc.rect(x, y(base + v), kBarWidth, y(base) - y(base + v),
             attr("class", std::string("bar ") + seg.css) + attr("data-case", s.case_id) +
                 attr("fill", seg.colour),
             s.strategy + " (case " + s.case_id + "): " + seg.name + " " + svg::ms(v) + " ms; T " +
                 svg::ms(s.t_median) + " ms");
    base += v;
  }
  doc.text(x + kBarWidth / 2, y(base) - 4, svg::ms(s.t_median),
           " text-anchor=\"middle\""
           " font-size=\"10\"");
  // The bar shows the time the schedule left exposed; the concurrency says how much of the
  // communication really ran beside compute, which the two can disagree on.
  if (std::isfinite(s.concurrency)) {
    doc.text(x + kBarWidth / 2, y(base) - 16, svg::num(std::round(s.concurrency * 100)) + "%",
             " class=\"concurrency\" text-anchor=\"middle\" font-size=\"10\"" +
                 attr("fill", kConcurrencyColour) + attr("data-case", s.case_id));
  }
  const double lx = x + kBarWidth / 2;
  const double ly = y.from + 12;
  doc.text(lx, ly, s.strategy,
           " class=\"bar-label\" text-anchor=\"end\"" +
               attr("transform", "rotate(-40 " + svg::num(lx) + " " + svg::num(ly) + ")"));
  doc.close("g");
}

// A shape's bars from x on, with its T_lb line and its label. Returns where the next begins.
double draw_shape(svg::Document& doc, const std::vector<const Summary*>& list, double x,
                  const Scale& y) {
  const double group_left = x;
  doc.open("g", attr("class", "shape-group"));
  for (const Summary* s : list) {
    draw_bar(doc, *s, x, y);
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
  return x + kGroupGap;
}

void draw_breakdown_legend(svg::Document& doc, double lx, double ly) {
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
}

}  // namespace

void write_breakdown_svg(std::ostream& out, const ResultFile& file) {
  const std::vector<Summary> all = summarize(file);
  const ShapeGroups shapes(all);
  const double left = 80, plot_top = 90, plot_h = 340, legend_w = 250;
  const double right =
      left + std::max(400.0, 40 + static_cast<double>(shapes.bars) * (kBarWidth + kBarGap) +
                                 static_cast<double>(shapes.order.size()) * kGroupGap);
  // Wide enough for the title and the emulated-link line above the plot.
  const double width = std::max(right + legend_w, 1000.0);
  const double height = plot_top + plot_h + 130;
  Scale y{0, shapes.top_value * 1.1, plot_top + plot_h, plot_top};
  const std::vector<double> ticks = svg::nice_ticks(0, y.hi * 1e3, 6);
  if (!ticks.empty()) y.hi = std::max(y.hi, ticks.back() / 1e3);
  Scale y_ms = y;  // the axis is labelled in ms
  y_ms.lo *= 1e3;
  y_ms.hi *= 1e3;

  svg::Document doc(out, width, height);
  write_title(doc, left, "Where the step time goes (median step, slowest rank)", file);
  write_y_axis(doc, y_ms, left, right, "time (ms)");
  if (shapes.groups.empty()) {
    doc.text(left + 20, plot_top + 40, "no cases to show (comm_only cases are not drawn)");
  }
  double x = left + 30;
  for (const CaseKey& key : shapes.order) x = draw_shape(doc, shapes.groups.at(key), x, y);
  doc.line(left, y.from, right, y.from, " stroke=\"black\"");
  draw_breakdown_legend(doc, right + 20, plot_top + 10);
  doc.finish();
}

}  // namespace fob
