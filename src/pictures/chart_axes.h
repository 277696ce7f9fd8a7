// What the summary pictures draw alike: a scale from data to pixels, a value axis, and the
// series' colours.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "fob/results.h"
#include "svg_writer.h"

namespace fob::charts {

using Point = std::pair<double, double>;

// The i-th series' colour: ten hand-picked ones, then hues spread by the golden angle at
// alternating lightness; no two i give the same colour, and none is a grey (greys are kept for
// the baseline and the ideal line).
std::string series_colour(size_t i);

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

// Horizontal gridlines and labels of a value axis.
void write_y_axis(svg::Document& doc, const Scale& y, double left, double right,
                  const std::string& label);

}  // namespace fob::charts
