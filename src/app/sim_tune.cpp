// `fobench sim --tune` (sim_tune.h).
#include "sim_tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "fob/cases.h"
#include "fob/strategy.h"
#include "io/json_text.h"

namespace fob {
namespace {

std::string shape_text(const Summary& s) {
  char text[160];
  std::snprintf(text, sizeof text, "b%lld s%lld d%lld f%lld", static_cast<long long>(s.batch),
                static_cast<long long>(s.seq), static_cast<long long>(s.hidden),
                static_cast<long long>(s.ffn));
  std::string out = text;
  if (has_attention(s.workload)) out += " heads" + std::to_string(s.heads);
  return out;
}

std::string ms(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e3);
  return buf;
}

std::string ratio_text(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double over(double a, double b) {
  return std::isfinite(a) && std::isfinite(b) && b > 0 ? a / b : kNaN;
}

// The table's columns, in the order cells() fills them: JSON strings where `text`, else
// numbers.
struct Column {
  const char* name;
  bool text;
};
constexpr Column kColumns[] = {{"workload", true},
                               {"shape", true},
                               {"dtype", true},
                               {"world", false},
                               {"best", true},
                               {"t_ms", false},
                               {"speedup", false},
                               {"t_over_t_lb", false},
                               {"runner_up", true},
                               {"runner_up_t_ms", false},
                               {"runner_up_speedup", false},
                               {"t_baseline_ms", false},
                               {"t_lb_ms", false},
                               {"candidates", false}};

std::vector<std::string> cells(const TuneRow& r) {
  const Summary& b = *r.best;
  const Summary* u = r.runner_up;
  return {b.workload,
          shape_text(b),
          b.dtype,
          std::to_string(b.world),
          b.strategy,
          ms(b.t_median),
          ratio_text(over(r.t_baseline, b.t_median)),
          ratio_text(over(b.t_median, r.t_lb)),
          u ? u->strategy : "-",
          u ? ms(u->t_median) : "-",
          u ? ratio_text(over(r.t_baseline, u->t_median)) : "-",
          ms(r.t_baseline),
          ms(r.t_lb),
          std::to_string(r.candidates)};
}

void write_md(std::ostream& out, const ResultFile& file, const std::vector<TuneRow>& rows) {
  out << "# fobench sim --tune: SIMULATED, not measured\n\n";
  out << "- machine: " << file.system.simulated << "\n";
  out << "- command: `" << file.run.command_line << "`\n";
  out << "- per shape and world: the fastest of baseline and every parameter 1.." << kTuneMaxParam
      << " of each strategy (`candidates`), its predicted T, speedup = T_baseline / T, T / T_lb "
         "(1 is the bound max(T_comp, T_comm)), and the fastest of another strategy "
         "(runner-up)\n\n";
  out << "| workload | shape | dtype | N | best | T (ms) | speedup | T / T_lb | runner-up | "
         "T (ms) | speedup | T_baseline (ms) | T_lb (ms) | candidates |\n";
  out << "|---|---|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n";
  for (const TuneRow& r : rows) {
    out << "|";
    for (const std::string& c : cells(r)) out << " " << c << " |";
    out << "\n";
  }
}

void write_csv(std::ostream& out, const ResultFile& file, const std::vector<TuneRow>& rows) {
  out << "# simulated: " << file.system.simulated << "\n";
  out << "# timer: " << file.system.timer << "\n";
  out << "# command_line: " << file.run.command_line << "\n";
  bool first = true;
  for (const Column& c : kColumns) {
    out << (first ? "" : ",") << c.name;
    first = false;
  }
  out << "\n";
  for (const TuneRow& r : rows) {
    first = true;
    for (const std::string& c : cells(r)) {
      out << (first ? "" : ",") << csv_field(c);
      first = false;
    }
    out << "\n";
  }
}

// "-" marks an absent value: a time without its reference, no runner-up.
std::string json_value(const Column& column, const std::string& cell) {
  if (cell == "-") return "null";
  return column.text ? json_string(cell) : cell;
}

void write_json(std::ostream& out, const ResultFile& file, const std::vector<TuneRow>& rows) {
  out << "{\n  \"simulated\": " << json_string(file.system.simulated)
      << ",\n  \"timer\": " << json_string(file.system.timer)
      << ",\n  \"command_line\": " << json_string(file.run.command_line) << ",\n  \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<std::string> c = cells(rows[i]);
    out << (i ? ",\n    {" : "\n    {");
    for (size_t k = 0; k < c.size(); ++k) {
      out << (k ? ", " : "") << json_string(kColumns[k].name) << ": "
          << json_value(kColumns[k], c[k]);
    }
    out << "}";
  }
  out << "\n  ]\n}\n";
}

}  // namespace

std::vector<CaseSpec> tune_cases(const Config& point, int world) {
  Config base = point;
  base.strategies = {role_name(StrategyRole::serial_baseline)};
  std::vector<CaseSpec> specs = make_cases(base, world);
  std::vector<std::string> seen = {role_name(StrategyRole::serial_baseline)};
  for (const std::string& text : point.strategies) {
    const Strategy* s = parse_strategy(text).strategy;
    if (std::find(seen.begin(), seen.end(), s->name) != seen.end() || s->is_reference() ||
        !strategy_applies(*s, point.workload)) {
      continue;
    }
    seen.emplace_back(s->name);
    CaseSpec spec = specs.back();
    const int last = s->param_name ? kTuneMaxParam : 1;
    for (int p = 1; p <= last; ++p) {
      spec.strategy = parse_strategy(s->param_name ? std::string(s->name) + ":" + std::to_string(p)
                                                   : std::string(s->name));
      try {
        validate_case(spec);
      } catch (const InputError&) {
        continue;  // a parameter the case does not take: not a candidate
      }
      specs.push_back(spec);
    }
  }
  return specs;
}

std::vector<TuneRow> tune_rows(const std::vector<Summary>& all) {
  std::vector<TuneRow> rows;
  std::map<CaseKey, size_t> index;  // the shape and world (strategy cleared) -> its row
  auto better = [](const Summary* a, const Summary* b) {
    return !b || (std::isfinite(a->t_median) && !(a->t_median >= b->t_median));
  };
  for (const Summary& s : all) {
    if (s.is_reference()) continue;
    const CaseKey shape = s.key().with_strategy("");
    auto [it, added] = index.emplace(shape, rows.size());
    if (added) rows.push_back({nullptr, nullptr, kNaN, kNaN, 0});
    TuneRow& row = rows[it->second];
    ++row.candidates;
    if (better(&s, row.best)) row.best = &s;
  }
  for (const Summary& s : all) {
    if (s.is_reference()) continue;
    TuneRow& row = rows[index.at(s.key().with_strategy(""))];
    if (s.has_role(StrategyRole::serial_baseline)) row.t_baseline = s.t_median;
    row.t_lb = s.t_lb;  // the shape's, the same on every row
    if (s.strategy_name() != row.best->strategy_name() && better(&s, row.runner_up)) {
      row.runner_up = &s;
    }
  }
  return rows;
}

void write_tune(std::ostream& out, const ResultFile& file, const std::vector<Summary>& all,
                ReportFormat format) {
  const std::vector<TuneRow> rows = tune_rows(all);
  switch (format) {
    case ReportFormat::md:
      write_md(out, file, rows);
      return;
    case ReportFormat::csv:
      write_csv(out, file, rows);
      return;
    case ReportFormat::json:
      write_json(out, file, rows);
      return;
    case ReportFormat::latex:
      break;
  }
  throw InputError("--format: 'latex' is not a --tune format; valid: md, csv, json");
}

}  // namespace fob
