#include "speedup_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fob/case_fields.h"
#include "fob/metrics.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "fob/types.h"
#include "fob/workload.h"
#include "pictures_common.h"
#include "svg_writer.h"

namespace fob::speedup {
namespace {

using pictures::field_number;
using pictures::field_text;

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

// Bytes of the full tensor a comm_only case gathers or reduces (nccl-tests' "size"): what
// prices its bandwidths (step_sent_bytes), times N / (N - 1) for a ring.
double message_bytes(const CaseResult& c) {
  const double sent = step_sent_bytes(c);
  return c.world > 1 ? sent * c.world / (c.world - 1) : sent;
}

Chart busbw_chart(const ResultFile& file, const std::vector<Summary>& all) {
  Chart chart;
  chart.title = "Bus bandwidth of comm_only along the sweep";
  chart.x_label = "message size (bytes, nccl-tests' size)";
  chart.y_label = "busbw (GB/s)";
  chart.bytes_axis = true;
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
    chart.series[index[name]].marks.push_back({{bytes, s.busbw},
                                               name + ": " + svg::num(bytes) + " B, busbw " +
                                                   svg::num(s.busbw) + " GB/s (case " + s.case_id +
                                                   ")",
                                               ""});
  }
  return chart;
}

// The fields a sweep may be drawn along, in the order one is chosen (CaseField::axis_rank): a
// field a user set before tokens, which is batch × seq and only chosen where neither tells the
// shapes apart alone.
const std::vector<std::string>& axis_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> names;
    for (const CaseField* f : case_axis_fields()) names.emplace_back(f->name);
    names.emplace_back(pictures::kTokens);
    return names;
  }();
  return fields;
}

// Whether `field` shapes any of `shown`: heads only attention, the MoE fields only a layer
// with experts.
bool shapes_any(const std::string& field, const std::vector<const Summary*>& shown) {
  const CaseField* f = find_case_field(field);
  return f == nullptr ||
         std::any_of(shown.begin(), shown.end(), [&](const Summary* s) { return f->applies(*s); });
}

// What a speedup chart's lines are drawn along, and what else varies: the fields x determines
// (batch where batch and seq change together) ride along it, the others keep lines apart.
struct SweepAxes {
  std::vector<std::string> varying;  // fields with more than one value
  std::string x_field;               // empty: the strategies' parameter
  std::vector<std::string> along;    // varying fields that x determines

  SweepAxes(const std::vector<const Summary*>& shown, const std::string& requested)
      : shown_(shown) {
    for (const std::string& f : axis_fields()) {
      if (!shapes_any(f, shown)) continue;
      std::set<double> values;
      for (const Summary* s : shown) values.insert(field_number(*s, f));
      if (values.size() > 1) varying.push_back(f);
    }
    x_field = requested.empty() ? choose() : checked(requested);
    for (const std::string& f : varying) {
      if (f != x_field && !x_field.empty() && determines(x_field, f)) along.push_back(f);
    }
  }

  // The fields other than x (and those riding along it) that vary, as text: one line each.
  std::string line_of(const Summary& s) const {
    std::string rest;
    for (const std::string& f : varying) {
      if (f == x_field || std::find(along.begin(), along.end(), f) != along.end()) continue;
      // tokens is batch × seq: it varies whenever they do, and adds nothing to a line's name.
      if (f == pictures::kTokens && x_field != pictures::kTokens) continue;
      rest += " " + f + "=" + field_text(s, f);
    }
    return rest;
  }

  // "batch changes with seq: 16 at seq 128 … 1 at seq 2048", for each field riding along x.
  std::vector<std::string> along_notes() const {
    std::vector<std::string> notes;
    if (along.empty()) return notes;
    const Summary* lo = *std::min_element(shown_.begin(), shown_.end(), [&](auto a, auto b) {
      return field_number(*a, x_field) < field_number(*b, x_field);
    });
    const Summary* hi = *std::max_element(shown_.begin(), shown_.end(), [&](auto a, auto b) {
      return field_number(*a, x_field) < field_number(*b, x_field);
    });
    for (const std::string& f : along) {
      if (f == pictures::kTokens) continue;  // batch × seq: said by those
      notes.push_back(f + " changes with " + x_field + ": " + field_text(*lo, f) + " at " +
                      x_field + " " + field_text(*lo, x_field) + " … " + field_text(*hi, f) +
                      " at " + x_field + " " + field_text(*hi, x_field));
    }
    return notes;
  }

 private:
  // Whether every two cases with one value of x have one value of f.
  bool determines(const std::string& x, const std::string& f) const {
    std::map<double, double> seen;
    for (const Summary* s : shown_) {
      auto [it, added] = seen.emplace(field_number(*s, x), field_number(*s, f));
      if (!added && it->second != field_number(*s, f)) return false;
    }
    return true;
  }

  // The first field (in axis_fields()' order) that tells every shape apart on its own, so that each
  // strategy is one line; else the first that varies.
  std::string choose() const {
    for (const std::string& x : varying) {
      if (std::all_of(varying.begin(), varying.end(),
                      [&](const std::string& f) { return f == x || determines(x, f); })) {
        return x;
      }
    }
    return varying.empty() ? "" : varying.front();
  }

  std::string checked(const std::string& requested) const {
    if (std::find(varying.begin(), varying.end(), requested) != varying.end()) return requested;
    if (std::find(axis_fields().begin(), axis_fields().end(), requested) == axis_fields().end()) {
      std::string fields;
      for (const std::string& f : axis_fields()) fields += (fields.empty() ? "" : ", ") + f;
      throw InputError("--x: '" + requested +
                       "' is not a numeric case field (valid choices: " + fields + ")");
    }
    std::string valid;
    for (const std::string& f : varying) valid += (valid.empty() ? "" : ", ") + f;
    throw InputError("--x: '" + requested + "' is not a field that varies between the " +
                     shown_.front()->workload + " cases of this file (valid choices: " +
                     (valid.empty() ? "none: they have one shape" : valid) + ")");
  }

  const std::vector<const Summary*>& shown_;
};

// A --tune file holds every parameter of a strategy at each x: its line is the fastest of them
// at each x (the parameter printed beside the point), the choice a user would make there.
void keep_fastest(std::vector<const Summary*>& shown, const SweepAxes& axes) {
  auto point_of = [&](const Summary& s) {
    return std::make_pair(s.strategy_name() + axes.line_of(s), field_number(s, axes.x_field));
  };
  std::map<std::pair<std::string, double>, const Summary*> fastest;
  for (const Summary* s : shown) {
    auto [it, added] = fastest.emplace(point_of(*s), s);
    // A time that is NaN (not simulated to the end) never hides a finite one.
    if (!added && (std::isnan(it->second->t_median) || s->t_median < it->second->t_median)) {
      it->second = s;
    }
  }
  std::erase_if(shown, [&](const Summary* s) { return fastest.at(point_of(*s)) != s; });
}

// A strategy's line: its family along the strategies' parameter, the fastest of the family in a
// --tune file, else the strategy as given.
std::string series_name(const Summary& s, const std::string& x_field, bool tuned) {
  const Strategy* def = s.definition();
  if (x_field.empty()) return s.strategy_name();
  if (!tuned) return s.strategy;
  return s.strategy_name() +
         (def && def->param_name ? " (fastest " + std::string(def->param_name) + ")" : "");
}

std::string x_label(const std::string& x_field) {
  if (x_field.empty()) {
    return "strategy parameter (slicing: C chunks; flash, flash_direct: m; default where "
           "omitted)";
  }
  return x_field == pictures::kTokens ? "tokens (batch × seq)" : x_field;
}

// `tuned`: a `fobench sim --tune` file (RunInfo::tuned). Any other file keeps every strategy
// as given, whose parameters the user chose to compare. `shown`: one panel's cases.
Chart speedup_chart(std::vector<const Summary*> shown, bool tuned, const std::string& requested) {
  // With --x, a panel of one shape is still drawn along the strategies' parameter.
  const SweepAxes axes(shown, requested);
  const std::string& x_field = axes.x_field;
  tuned = tuned && !x_field.empty();
  if (tuned) keep_fastest(shown, axes);

  Chart chart;
  chart.title = shown.front()->workload + ", " + shown.front()->dtype;
  chart.ideal_flat = x_field.empty();
  chart.y_label = "speedup over baseline (T_baseline / T)";
  chart.x_label = x_label(x_field);
  chart.notes.push_back("Every case: " + pictures::common_shape(shown));
  for (std::string& n : axes.along_notes()) chart.notes.push_back(std::move(n));
  std::map<std::string, size_t> index, ideal_index;
  std::set<std::tuple<std::string, double, double>> ideal_seen;
  for (const Summary* s : shown) {
    const std::string rest = axes.line_of(*s);
    const bool baseline = s->has_role(StrategyRole::serial_baseline);
    const int param = strategy_param(s->strategy);
    const Strategy* def = s->definition();
    const bool takes_param = def && def->param_name;
    // Baseline is 1 by definition: one dashed line, whatever else varies.
    const std::string name = baseline ? s->strategy_name() : series_name(*s, x_field, tuned) + rest;
    if (index.find(name) == index.end()) {
      index[name] = chart.series.size();
      chart.series.push_back({name, baseline, x_field.empty() && param == 0, {}});
    }
    const double x = x_field.empty() ? param : field_number(*s, x_field);
    const double y = baseline ? 1.0 : s->speedup;
    if (!std::isfinite(y)) continue;
    const std::string note =
        tuned && takes_param ? std::string(def->param_name) + "=" + std::to_string(param) : "";
    chart.series[index[name]].marks.push_back({{x, y},
                                               s->strategy + rest + ": speedup " + svg::num(y) +
                                                   " (T " + svg::ms(s->t_median) + " ms, case " +
                                                   s->case_id + ")",
                                               note});
    if (std::isfinite(s->ideal_speedup) && ideal_seen.insert({rest, x, s->ideal_speedup}).second) {
      auto [it, added] = ideal_index.emplace(rest, chart.ideal.size());
      if (added) chart.ideal.emplace_back();
      chart.ideal[it->second].emplace_back(x, s->ideal_speedup);
    }
  }
  for (Series& se : chart.series) std::sort(se.marks.begin(), se.marks.end());
  for (auto& line : chart.ideal) std::sort(line.begin(), line.end());
  return chart;
}

}  // namespace

std::vector<Chart> make_charts(const ResultFile& file, const std::vector<Summary>& all,
                               const std::string& x_field) {
  const bool only_comm = !all.empty() && std::all_of(all.begin(), all.end(), [](const Summary& s) {
    return s.has_role(StrategyRole::comm_reference);
  });
  if (only_comm && !x_field.empty()) {
    throw InputError("--x: '" + x_field +
                     "' does not apply: a file of comm_only cases is drawn along the message "
                     "size (valid choices: leave --x out)");
  }
  if (only_comm) return {busbw_chart(file, all)};
  // One panel per workload and dtype, in the order they first appear.
  std::vector<std::vector<const Summary*>> panels;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const Summary& s : all) {
    if (s.is_reference()) continue;
    auto [it, added] = index.emplace(std::make_pair(s.workload, s.dtype), panels.size());
    if (added) panels.emplace_back();
    panels[it->second].push_back(&s);
  }
  std::vector<Chart> charts;
  for (const auto& rows : panels) charts.push_back(speedup_chart(rows, file.run.tuned, x_field));
  if (charts.empty()) charts.push_back(Chart{});
  return charts;
}

}  // namespace fob::speedup
