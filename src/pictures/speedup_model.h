// What the speedup picture draws, from summarize()'s rows: one series per strategy along the
// sweep's x axis (or bus bandwidth along the message size for a file of comm_only cases).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fob/metrics.h"
#include "fob/results.h"

namespace fob::speedup {

using Point = std::pair<double, double>;

struct Mark {
  Point at;          // (x, y) in data units
  std::string tip;   // the tooltip
  std::string note;  // printed beside the point: a --tune file's chosen parameter ("C=4")
  bool operator<(const Mark& o) const { return at < o.at; }
};

struct Series {
  std::string name;
  bool reference = false;  // baseline: a dashed line at 1
  bool flat = false;       // no x of its own: drawn across the whole x range
  std::vector<Mark> marks;
};

// One panel: the cases of one workload and dtype.
struct Chart {
  std::string title, x_label, y_label;
  std::vector<std::string> notes;  // under the panel's title: what every case shares, and
                                   // what the x axis carries along
  std::vector<Series> series;
  // T_baseline / T_lb where known, one line per line-name suffix (the fields other than x that
  // vary): the bound of one set of shapes, never joined across sets.
  std::vector<std::vector<Point>> ideal;
  bool ideal_flat = false;  // one shape: the bound is one number, drawn across the chart
  bool bytes_axis = false;  // x is a message size
};

// The panels of a file: bus bandwidth when every case is comm_only (one panel), else speedup
// over baseline, one panel per workload and dtype, each along `x_field` ("" chooses: the field
// that tells the panel's shapes apart on its own, tokens first). InputError when x_field does
// not vary in a panel of several shapes.
std::vector<Chart> make_charts(const ResultFile& file, const std::vector<Summary>& all,
                               const std::string& x_field);

}  // namespace fob::speedup
