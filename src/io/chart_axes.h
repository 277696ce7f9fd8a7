// What the summary pictures draw alike: a scale from data to pixels, the title with its
// emulated-link or simulated note, a value axis, and the series' colours.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "fob/results.h"
#include "svg_writer.h"

namespace fob::charts {

using Point = std::pair<double, double>;

inline constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948",
                                           "#76b7b2", "#ff9da7", "#9c755f", "#e15759", "#bab0ac"};
inline constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

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

// The picture's title, and under it what makes its times other than measured here.
void write_title(svg::Document& doc, double x, const std::string& title, const ResultFile& file);

// Horizontal gridlines and labels of a value axis.
void write_y_axis(svg::Document& doc, const Scale& y, double left, double right,
                  const std::string& label);

}  // namespace fob::charts
