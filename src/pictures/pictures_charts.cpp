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
#include "picture_layout.h"
#include "pictures_common.h"
#include "svg_writer.h"

namespace fob {
namespace {

using charts::Scale;
using charts::write_y_axis;
using pictures::field_text;
using pictures::shape_fields;
using pictures::text_width;
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
// left out. The segments add up to the case's T, the time its label states: a case that ran
// faster than its shape's compute_only (their slots ran in different phases of the machine) has
// its T_comp segment cut at T and says so, where stacking the whole T_comp would draw the bar
// above its own label.
std::vector<Segment> segments(const Summary& s) {
  const double t = s.t_median;
  if (s.has_role(StrategyRole::compute_reference)) {
    return {{"T_comp", "seg-comp", "#4e79a7", t}};
  }
  if (!std::isfinite(s.t_comp) || !(std::isfinite(t) && t >= 0)) {
    return {{"T, not split (no compute_only case of its shape)", "seg-total", "#bab0ac", t}};
  }
  const double comp = std::clamp(s.t_comp, 0.0, t);
  const double penalty =
      std::isfinite(s.slicing_penalty) ? std::clamp(s.slicing_penalty, 0.0, t - comp) : 0;
  const char* comp_name = comp < s.t_comp
                              ? "T_comp, cut at this case's T (compute_only's median is above it)"
                              : "T_comp";
  return {{comp_name, "seg-comp", "#4e79a7", comp},
          {"slicing penalty", "seg-penalty", "#edc948", penalty},
          {"exposed communication", "seg-exposed", "#e15759", t - comp - penalty}};
}

constexpr double kLabelFont = 12;
constexpr double kGroupLabelFont = 11;
constexpr double kMaxGroupLabel = 260;  // a group label wraps at this width
const double kLabelCos = std::cos(40 * M_PI / 180), kLabelSin = std::sin(40 * M_PI / 180);

// The cases to draw, grouped by shape in the order they first appear (comm_only is left out),
// and what tells the shapes apart: each group is labelled with the fields that vary between
// groups only, the rest is said once above the plot.
struct ShapeGroups {
  std::vector<CaseKey> order;
  std::map<CaseKey, std::vector<const Summary*>> groups;
  std::vector<std::string> varying;  // shape fields with more than one value
  size_t bars = 0;
  double top_value = 0;   // the tallest bar or T_lb
  double label_drop = 0;  // how far the rotated strategy labels reach below the axis

  // `tuned`: a `fobench sim --tune` file, of which each strategy's fastest parameter per shape
  // is drawn (the others are the search, not a choice anyone would make).
  ShapeGroups(const std::vector<Summary>& all, bool tuned) {
    for (const Summary& s : all) {
      if (s.has_role(StrategyRole::comm_reference)) continue;
      const CaseKey key = shape_key(s);
      if (groups.find(key) == groups.end()) order.push_back(key);
      std::vector<const Summary*>& list = groups[key];
      auto same = std::find_if(list.begin(), list.end(), [&](const Summary* o) {
        return o->strategy_name() == s.strategy_name();
      });
      if (!tuned || same == list.end()) {
        list.push_back(&s);
      } else if (std::isnan((*same)->t_median) || s.t_median < (*same)->t_median) {
        *same = &s;
      }
    }
    for (const std::string& f : shape_fields()) {
      std::set<std::string> values;
      for (const auto& [key, list] : groups) values.insert(field_text(*list.front(), f));
      if (values.size() > 1) varying.push_back(f);
    }
    for (const auto& [key, list] : groups) {
      for (const Summary* s : list) {
        double total = 0;
        for (const Segment& seg : segments(*s)) total += std::isfinite(seg.value) ? seg.value : 0;
        top_value = std::max({top_value, total, std::isfinite(s->t_lb) ? s->t_lb : 0});
        label_drop = std::max(label_drop, text_width(s->strategy, kLabelFont) * kLabelSin + 12);
        ++bars;
      }
    }
    if (top_value <= 0) top_value = 1e-3;
  }

  // A group's label: the fields that vary between groups, wrapped.
  std::vector<std::string> label(const CaseKey& key) const {
    std::string text;
    for (const std::string& f : varying) {
      text += (text.empty() ? "" : " · ") + f + " " + field_text(*groups.at(key).front(), f);
    }
    return pictures::wrap(text, kMaxGroupLabel, kGroupLabelFont);
  }

  // What every group shares, for the subtitle.
  std::string common() const {
    std::vector<const Summary*> firsts;
    for (const CaseKey& key : order) firsts.push_back(groups.at(key).front());
    return (order.size() > 1 ? "Every shape: " : "Shape: ") + pictures::common_shape(firsts);
  }

  // A group's width: its bars, or its label where that is wider.
  double width(const CaseKey& key) const {
    double w = static_cast<double>(groups.at(key).size()) * (kBarWidth + kBarGap) - kBarGap;
    for (const std::string& line : label(key)) {
      w = std::max(w, text_width(line, kGroupLabelFont) + 8);
    }
    return w;
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
             attr("class", std::string("bar ") + seg.css) + attr("data-mark", seg.css) +
                 attr("data-case", s.case_id) + attr("fill", seg.colour),
             s.strategy + " (case " + s.case_id + "): " + seg.name + " " + svg::ms(v) + " ms; T " +
                 svg::ms(s.t_median) + " ms");
    base += v;
  }
  doc.text(x + kBarWidth / 2, y(base) - 4, svg::ms(s.t_median),
           " class=\"bar-time\" text-anchor=\"middle\" font-size=\"10\"");
  // The bar shows the time the schedule left exposed; the concurrency says how much of the
  // communication really ran beside compute, which the two can disagree on.
  if (std::isfinite(s.concurrency)) {
    doc.text(x + kBarWidth / 2, y(base) - 16, svg::num(std::round(s.concurrency * 100)) + "%",
             " class=\"concurrency\" data-mark=\"concurrency\" text-anchor=\"middle\""
             " font-size=\"10\"" +
                 attr("fill", kConcurrencyColour) + attr("data-case", s.case_id));
  }
  const double lx = x + kBarWidth / 2;
  const double ly = y.from + 12;
  doc.text(lx, ly, s.strategy,
           " class=\"bar-label\" text-anchor=\"end\"" +
               attr("transform", "rotate(-40 " + svg::num(lx) + " " + svg::num(ly) + ")"));
  doc.close("g");
}

// A shape's bars from x on, centred in its width, with its T_lb line and its label. Returns
// where the next group begins.
double draw_shape(svg::Document& doc, const ShapeGroups& shapes, const CaseKey& key, double x,
                  const Scale& y) {
  const std::vector<const Summary*>& list = shapes.groups.at(key);
  const double width = shapes.width(key);
  const double bars = static_cast<double>(list.size()) * (kBarWidth + kBarGap) - kBarGap;
  const double group_left = x + (width - bars) / 2;
  doc.open("g", attr("class", "shape-group"));
  double bx = group_left;
  for (const Summary* s : list) {
    draw_bar(doc, *s, bx, y);
    bx += kBarWidth + kBarGap;
  }
  const double group_right = bx - kBarGap;
  const Summary& first = *list.front();
  if (std::isfinite(first.t_lb)) {
    doc.line(group_left - 6, y(first.t_lb), group_right + 6, y(first.t_lb),
             " class=\"tlb\" data-mark=\"tlb\" stroke=\"black\" stroke-width=\"2\""
             " stroke-dasharray=\"6 3\"",
             "T_lb = max(T_comp, T_comm) = " + svg::ms(first.t_lb) + " ms");
  }
  double ly = y.from + shapes.label_drop + 16;
  for (const std::string& line : shapes.label(key)) {
    doc.text(x + width / 2, ly, line,
             " class=\"shape-label\" text-anchor=\"middle\" font-size=\"11\"");
    ly += 14;
  }
  doc.close("g");
  return x + width + kGroupGap;
}

pictures::Legend breakdown_legend(const std::vector<Summary>& all) {
  using pictures::Legend;
  std::set<std::string> drawn;
  bool tlb = false, concurrency = false;
  for (const Summary& s : all) {
    if (s.has_role(StrategyRole::comm_reference)) continue;
    for (const Segment& seg : segments(s)) drawn.insert(seg.css);
    tlb |= std::isfinite(s.t_lb);
    concurrency |= std::isfinite(s.concurrency);
  }
  const Segment kinds[] = {
      {"T_comp (compute_only's T)", "seg-comp", "#4e79a7", 0},
      {"slicing penalty (≥ 0)", "seg-penalty", "#edc948", 0},
      {"exposed communication", "seg-exposed", "#e15759", 0},
      {"T, not split (no compute_only of its shape)", "seg-total", "#bab0ac", 0}};
  Legend legend(1e9, true);
  for (const Segment& seg : kinds) {
    if (drawn.count(seg.css))
      legend.add(seg.css, Legend::Swatch::box, attr("fill", seg.colour), seg.name);
  }
  if (tlb) {
    legend.add("tlb", Legend::Swatch::line,
               " stroke=\"black\" stroke-width=\"2\" stroke-dasharray=\"6 3\"",
               "T_lb = max(T_comp, T_comm) of the shape");
  }
  if (concurrency) {
    legend.add("concurrency", Legend::Swatch::none,
               " font-size=\"11\"" + attr("fill", kConcurrencyColour),
               "%: share of comm time the rank also computed");
  }
  return legend;
}

}  // namespace

void write_breakdown_svg(std::ostream& out, const ResultFile& file) {
  const std::vector<Summary> all = summarize(file);
  const ShapeGroups shapes(all, file.run.tuned);
  const pictures::Legend legend = breakdown_legend(all);
  const std::string title = "Where the step time goes (median step, slowest rank)";
  const double left = 80, plot_h = 340;
  double groups_w = 40;
  for (const CaseKey& key : shapes.order) groups_w += shapes.width(key) + kGroupGap;
  const double right = left + std::max(400.0, groups_w);
  const double width = std::max(right + legend.widest() + 30, 1000.0);
  std::vector<std::string> subtitles{shapes.common(),
                                     "Label on a bar: its T in ms; above it, in purple, its "
                                     "concurrency"};
  if (file.run.tuned) {
    subtitles.push_back("A --tune file: each strategy's fastest parameter at each shape");
  }
  const double plot_top =
      pictures::header_height(width - left - 10, title, subtitles, file.system) + 30;
  size_t label_lines = 0;
  for (const CaseKey& key : shapes.order)
    label_lines = std::max(label_lines, shapes.label(key).size());
  const double axis_room = shapes.label_drop + 24 + 14 * static_cast<double>(label_lines);
  const std::vector<std::string> caption = pictures::caption_lines(file.system, {}, width - 20);
  const double caption_top = plot_top + std::max(plot_h, legend.height()) + axis_room + 16;
  const double height =
      caption_top + pictures::kCaptionLine * static_cast<double>(caption.size()) + 4;
  Scale y{0, shapes.top_value * 1.1, plot_top + plot_h, plot_top};
  const std::vector<double> ticks = svg::nice_ticks(0, y.hi * 1e3, 6);
  if (!ticks.empty()) y.hi = std::max(y.hi, ticks.back() / 1e3);
  Scale y_ms = y;  // the axis is labelled in ms
  y_ms.lo *= 1e3;
  y_ms.hi *= 1e3;

  svg::Document doc(out, width, height);
  pictures::write_header(doc, left, width - left - 10, title, subtitles, file.system);
  write_y_axis(doc, y_ms, left, right, "time (ms)");
  if (shapes.groups.empty()) {
    doc.text(left + 20, plot_top + 40, "no cases to show (comm_only cases are not drawn)");
  }
  double x = left + 30;
  for (const CaseKey& key : shapes.order) x = draw_shape(doc, shapes, key, x, y);
  doc.line(left, y.from, right, y.from, " stroke=\"black\"");
  legend.write(doc, right + 20, plot_top + 10);
  pictures::write_caption(doc, 10, caption_top, caption);
  doc.finish();
}

}  // namespace fob
