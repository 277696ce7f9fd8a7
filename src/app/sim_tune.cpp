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
#include "sim_costs.h"

namespace fob {
namespace {

// A case with experts shows its MoE fields in place of the ffn it does not use.
std::string shape_text(const Summary& s) {
  char text[160];
  if (s.experts > 0) {
    std::snprintf(text, sizeof text, "b%lld s%lld d%lld E%lld k%lld F%lld",
                  static_cast<long long>(s.batch), static_cast<long long>(s.seq),
                  static_cast<long long>(s.hidden), static_cast<long long>(s.experts),
                  static_cast<long long>(s.top_k), static_cast<long long>(s.expert_ffn));
    std::string out = text;
    if (s.moe_skew != 0) {
      std::snprintf(text, sizeof text, " skew%g", s.moe_skew);
      out += text;
    }
    if (s.capacity_factor != 0) {
      std::snprintf(text, sizeof text, " cap%g", s.capacity_factor);
      out += text;
    }
    // The router's seed routes other tokens: rows of a seed sweep differ by it alone.
    return out + " seed" + std::to_string(s.moe_seed);
  }
  std::snprintf(text, sizeof text, "b%lld s%lld d%lld f%lld", static_cast<long long>(s.batch),
                static_cast<long long>(s.seq), static_cast<long long>(s.hidden),
                static_cast<long long>(s.ffn));
  std::string out = text;
  if (has_heads(s.workload)) out += " heads" + std::to_string(s.heads);
  return out;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double over(double a, double b) {
  return std::isfinite(a) && std::isfinite(b) && b > 0 ? a / b : kNaN;
}

Column tune_col(const char* name, const char* heading, CellType type, const char* unit = "") {
  Column c{name, unit, type};
  c.heading = heading;
  c.digits = 0;  // the simulator's times are exact; scripts see the same 3 decimals as people
  return c;
}

std::vector<Column> tune_columns() {
  const CellType text = CellType::text, real = CellType::real;
  return {tune_col("workload", "", text),
          tune_col("shape", "", text),
          tune_col("dtype", "", text),
          tune_col("world", "N", CellType::integer),
          tune_col("best", "", text),
          tune_col("t", "T", real, "ms"),
          tune_col("speedup", "", real),
          tune_col("t_over_t_lb", "T / T_lb", real),
          tune_col("runner_up", "runner-up", text),
          tune_col("runner_up_t", "T", real, "ms"),
          tune_col("runner_up_speedup", "speedup", real),
          tune_col("t_baseline", "T_baseline", real, "ms"),
          tune_col("t_lb", "T_lb", real, "ms"),
          tune_col("candidates", "", CellType::integer)};
}

// A candidate as the table names it: its strategy, and "(ce)" where copy engines priced it.
std::string label(const Summary& s, bool ce) {
  return ce ? s.strategy + " (ce)" : s.strategy;
}

// In the order of tune_columns().
std::vector<Cell> cells(const TuneRow& r) {
  const Summary& b = *r.best;
  const Summary* u = r.runner_up;
  const auto ms = [](double seconds) { return Cell::of_real(seconds * 1e3); };
  return {Cell::of(b.workload),
          Cell::of(shape_text(b)),
          Cell::of(b.dtype),
          Cell::of_int(b.world),
          Cell::of(label(b, r.best_ce)),
          ms(b.t_median),
          Cell::of_real(over(r.t_baseline, b.t_median)),
          Cell::of_real(over(b.t_median, r.t_lb)),
          u ? Cell::of(label(*u, r.runner_up_ce)) : Cell::none(),
          u ? ms(u->t_median) : Cell::none(),
          u ? Cell::of_real(over(r.t_baseline, u->t_median)) : Cell::none(),
          ms(r.t_baseline),
          ms(r.t_lb),
          Cell::of_int(r.candidates)};
}

}  // namespace

std::vector<CaseSpec> tune_cases(const Config& point, int world) {
  Config base = point;
  base.strategies = {role_name(StrategyRole::serial_baseline)};
  std::vector<CaseSpec> specs = make_cases(base, world);
  std::vector<std::string> seen = {role_name(StrategyRole::serial_baseline)};
  // Without a list of its own the search covers every strategy of the table, those that only
  // some workloads take (flash_qs, flash_stream) included; a list given narrows it.
  std::vector<std::string> searched = point.strategies;
  if (searched == default_strategies()) {
    searched.clear();
    for (const Strategy* s : all_strategies()) searched.emplace_back(s->name);
  }
  for (const std::string& text : searched) {
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

std::vector<TuneRow> tune_rows(const std::vector<Summary>& all, const std::set<std::string>& ce) {
  std::vector<TuneRow> rows;
  std::map<CaseKey, size_t> index;  // the shape and world (strategy cleared) -> its row
  auto better = [](const Summary* a, const Summary* b) {
    return !b || (std::isfinite(a->t_median) && !(a->t_median >= b->t_median));
  };
  auto on_ce = [&ce](const Summary& s) { return ce.count(s.case_id) > 0; };
  for (const Summary& s : all) {
    if (s.is_reference()) continue;
    const CaseKey shape = s.key().with_strategy("");
    auto [it, added] = index.emplace(shape, rows.size());
    if (added) rows.push_back({nullptr, nullptr, false, false, kNaN, kNaN, 0});
    TuneRow& row = rows[it->second];
    ++row.candidates;
    if (better(&s, row.best)) row.best = &s;
  }
  for (const Summary& s : all) {
    if (s.is_reference()) continue;
    TuneRow& row = rows[index.at(s.key().with_strategy(""))];
    if (s.has_role(StrategyRole::serial_baseline) && !on_ce(s)) row.t_baseline = s.t_median;
    row.t_lb = s.t_lb;  // the shape's, the same on every row
    if (s.strategy_name() != row.best->strategy_name() && better(&s, row.runner_up)) {
      row.runner_up = &s;
    }
  }
  for (TuneRow& row : rows) {
    row.best_ce = on_ce(*row.best);
    row.runner_up_ce = row.runner_up && on_ce(*row.runner_up);
  }
  return rows;
}

TableDocument tune_document(const ResultFile& file, const std::vector<Summary>& all) {
  TableDocument doc;
  doc.title = "fobench sim --tune: SIMULATED, not measured";
  doc.facts = {{"simulated", Cell::of(file.system.simulated)},
               {"timer", Cell::of(file.system.timer)},
               {"command_line", Cell::of(file.run.command_line)}};
  doc.prose = {"- machine: " + file.system.simulated, "- command: `" + file.run.command_line + "`",
               "- per shape and world: the fastest of baseline and every parameter 1.." +
                   std::to_string(kTuneMaxParam) +
                   " of each strategy (`candidates`), its predicted T, speedup = T_baseline / T, "
                   "T / T_lb (1 is the bound max(T_comp, T_comm)), and the fastest of another "
                   "strategy (runner-up)"};
  std::set<std::string> ce;
  for (const CaseResult& c : file.cases) {
    if (std::find(c.facts.begin(), c.facts.end(), kCeFact) != c.facts.end()) ce.insert(c.id);
  }
  if (!ce.empty()) {
    doc.prose.push_back(
        "- transport: each candidate within one node also priced on copy engines (`(ce)`: "
        "transport ce, GEMMs on all SMs); T_baseline and T_lb are the config's transport's");
  }
  Table table{"", tune_columns(), {}, {}};
  for (const TuneRow& r : tune_rows(all, ce)) table.rows.push_back(cells(r));
  doc.tables.push_back(std::move(table));
  return doc;
}

}  // namespace fob
