#include "chart_axes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "picture_layout.h"

namespace fob::charts {

using svg::attr;

std::string series_colour(size_t i) {
  static const char* const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948",
                                        "#76b7b2", "#ff9da7", "#9c755f", "#e15759", "#1f3d7a"};
  constexpr size_t kPalette = sizeof palette / sizeof palette[0];
  if (i < kPalette) return palette[i];
  // HSL to RGB with saturation 0.65; lightness 0.35, 0.5 or 0.62 by turn. Golden-angle hues
  // never repeat, and the hex form keeps them apart: neighbours differ by 137.5 degrees.
  const size_t k = i - kPalette;
  const double hue = std::fmod(static_cast<double>(k) * 137.50776 + 15, 360.0);
  const double light[] = {0.35, 0.5, 0.62};
  const double l = light[k % 3], sat = 0.65;
  const double chroma = (1 - std::fabs(2 * l - 1)) * sat;
  const double h = hue / 60, xc = chroma * (1 - std::fabs(std::fmod(h, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (h < 1)
    r = chroma, g = xc;
  else if (h < 2)
    r = xc, g = chroma;
  else if (h < 3)
    g = chroma, b = xc;
  else if (h < 4)
    g = xc, b = chroma;
  else if (h < 5)
    r = xc, b = chroma;
  else
    r = chroma, b = xc;
  const double m = l - chroma / 2;
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround((r + m) * 255)),
                static_cast<int>(std::lround((g + m) * 255)),
                static_cast<int>(std::lround((b + m) * 255)));
  return buf;
}

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
  // The axis's title stands clear of its widest tick label, however many digits that has.
  double widest = 0;
  for (double t : ticks) {
    widest = std::max(widest, pictures::text_width(svg::tick_label(t, step), 12));
  }
  const double lx = std::max(10.0, std::min(left - 48, left - 6 - widest - 12));
  const double mid = (y.from + y.to) / 2;
  doc.text(lx, mid, label,
           " text-anchor=\"middle\"" +
               attr("transform", "rotate(-90 " + svg::num(lx) + " " + svg::num(mid) + ")"));
  doc.close("g");
}

}  // namespace fob::charts
