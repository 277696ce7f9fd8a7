// `fobench compare`'s table (fob/compare.h): the comparison as a document of the table model,
// one table of people's columns for Markdown and LaTeX, one of every column for CSV and JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fob/compare.h"
#include "fob/compare_report.h"
#include "fob/table.h"

namespace fob {
namespace {

// Values are shown in milliseconds (step times) or GB/s (bandwidth).
double display_scale(CompareMetric m) {
  return m == CompareMetric::busbw ? 1.0 : 1e3;
}
const char* unit(CompareMetric m) {
  return m == CompareMetric::busbw ? "GB/s" : "ms";
}
// Changes are percentages, but a metric that can cross zero (exposed_comm) changes in ms.
double change_scale(CompareMetric m) {
  return m == CompareMetric::exposed_comm ? 1e3 : 100.0;
}
const char* change_unit(CompareMetric m) {
  return m == CompareMetric::exposed_comm ? "ms" : "%";
}
std::string fixed(double v, int decimals, bool sign = false) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.*f" : "%.*f", decimals, v);
  return buf;
}

std::string hosts_of(const SystemInfo& s) {
  std::set<std::string> seen;
  std::string out;
  std::stringstream in(s.hostnames);
  std::string host;
  while (std::getline(in, host, ',')) {
    if (seen.insert(host).second) out += (out.empty() ? "" : ",") + host;
  }
  return out.empty() ? "?" : out;
}

const char* kKeyNames[] = {"workload", "strategy", "batch", "seq",  "hidden",
                           "ffn",      "heads",    "dtype", "world"};

std::vector<Cell> key_cells(const CaseKey& k) {
  return {Cell::of(k.workload),  Cell::of(k.strategy),   Cell::of_int(k.batch),
          Cell::of_int(k.seq),   Cell::of_int(k.hidden), Cell::of_int(k.ffn),
          Cell::of_int(k.heads), Cell::of(k.dtype),      Cell::of_int(k.world)};
}

// The case's fields; people read them left-aligned, as the key they are.
std::vector<Column> key_columns() {
  std::vector<Column> columns;
  for (const char* name : kKeyNames) {
    const std::string n = name;
    Column c{
        name, "",
        n == "workload" || n == "strategy" || n == "dtype" ? CellType::text : CellType::integer};
    c.align = Align::left;
    columns.push_back(c);
  }
  return columns;
}

const char* verdict_token(Verdict v) {
  switch (v) {
    case Verdict::regressed:
      return "regressed";
    case Verdict::improved:
      return "improved";
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::no_change:
      break;
  }
  return "no_change";
}

std::string direction_text(const Comparison& c) {
  const std::string t = fixed(c.threshold_pct, 1);
  const std::string of = c.metric == CompareMetric::exposed_comm
                             ? "% of the BASE case's step time T (exposed_comm can cross zero, so "
                               "its change is a difference in ms, never a ratio)"
                             : "%";
  const std::string sides = higher_is_worse(c.metric)
                                ? "regresses when its whole interval lies above +" + t + of +
                                      ", improves when it lies below -" + t + "%"
                                : "regresses when its whole interval lies below -" + t +
                                      "% (a bandwidth drop), improves when it lies above +" + t +
                                      "%";
  return sides + "; no change when it lies within +-" + t +
         "%; inconclusive otherwise: the files cannot tell a change of that size from noise "
         "(`detectable` is the interval's half-width; `rounds needed` what would narrow it to the "
         "threshold)";
}

const char* resampled(int rounds) {
  return resampled_by_rounds(rounds) ? "rounds" : "iterations";
}

// Empty when both sides were resampled by rounds; else which side was not, and what that costs.
std::string drift_note(const CaseChange& ch) {
  const bool base = !resampled_by_rounds(ch.base_rounds);
  const bool next = !resampled_by_rounds(ch.new_rounds);
  if (!base && !next) return {};
  const std::string fewer = " fewer than " + std::to_string(kMinBootstrapRounds) + " rounds";
  if (base && next) {
    return "BASE and NEW each had" + fewer +
           ", so their iterations were resampled: the interval ignores their run-to-run drift";
  }
  return std::string(base ? "BASE" : "NEW") + " had" + fewer +
         ", so its iterations were resampled: the interval ignores its run-to-run drift";
}

int drift_ignored(const Comparison& c) {
  return static_cast<int>(
      std::count_if(c.changes.begin(), c.changes.end(),
                    [](const CaseChange& ch) { return !drift_note(ch).empty(); }));
}

// Said in every format (on stderr beside csv and json) when a case's interval is narrower than an
// interval over rounds would be.
}  // namespace

std::string compare_drift_warning(const Comparison& c) {
  const int n = drift_ignored(c);
  if (n == 0) return {};
  return std::to_string(n) + " case(s) have a side with fewer than " +
         std::to_string(kMinBootstrapRounds) +
         " rounds (a file from before rounds were recorded, or --rounds 1): that side's "
         "iterations were resampled instead, so the interval ignores its run-to-run drift and "
         "may call drift a change";
}

namespace {

std::string interval_text() {
  return "95% bootstrap interval over rounds (over iterations for a side with fewer than " +
         std::to_string(kMinBootstrapRounds) + " rounds)";
}

std::string rounds_cell(const CaseChange& ch) {
  const auto side = [](int rounds) {
    return std::to_string(rounds) + (resampled_by_rounds(rounds) ? "" : "*");
  };
  return side(ch.base_rounds) + "/" + side(ch.new_rounds);
}

}  // namespace

std::string compare_result_line(const Comparison& c) {
  const int regressed = c.count(Verdict::regressed);
  const int inconclusive = c.count(Verdict::inconclusive);
  std::string counts = std::to_string(regressed) + " regressed, " +
                       std::to_string(c.count(Verdict::improved)) + " improved, " +
                       std::to_string(c.count(Verdict::no_change)) + " no change, " +
                       std::to_string(inconclusive) + " inconclusive";
  const auto names = [&c](Verdict v) {
    std::string text;
    for (const CaseChange& ch : c.changes) {
      if (ch.verdict != v) continue;
      text += "\n  - " + ch.key.text();
      if (ch.rounds_needed > 0) {
        text += " (detectable +-" + fixed(ch.detectable * change_scale(c.metric), 1) +
                change_unit(c.metric) + "; about " + std::to_string(ch.rounds_needed) +
                " rounds per file would narrow it to the threshold)";
      }
    }
    return text;
  };
  if (regressed > 0) return "Result: REGRESSION (" + counts + "):" + names(Verdict::regressed);
  if (inconclusive > 0) {
    return "Result: INCONCLUSIVE, no regression found but these files could not have seen one of " +
           fixed(c.threshold_pct, 1) + "% (" + counts + "):" + names(Verdict::inconclusive);
  }
  return "Result: no regression (" + counts + ")";
}

namespace {

Column number_col(const std::string& name, const std::string& unit, int precision,
                  bool sign = false) {
  Column c{name, unit, CellType::real, precision};
  c.digits = 6;  // the changes and intervals are percentages of noisy medians
  c.sign = sign;
  return c;
}

std::string side_line(const CompareSide& side) {
  const SystemInfo& s = side.file.system;
  return "- " + side.name + ": `" + side.path + "` - machine " + hosts_of(s) + " (" +
         std::to_string(s.world_size) + " ranks), backend " + s.backend + ", transport " +
         s.transport + ", link " + s.link_emulation + ", timer " + s.timer + ", git " +
         side.file.run.git_commit + ", created " + side.file.run.created_utc;
}

// Markdown and LaTeX: the compared cases, rounded.
Table people_table(const Comparison& c) {
  const double scale = display_scale(c.metric);
  const std::string metric = to_string(c.metric);
  Table table{"", key_columns(), {}, {}};
  const std::string u = change_unit(c.metric);
  for (Column col :
       {number_col("base " + metric, unit(c.metric), 3),
        number_col("new " + metric, unit(c.metric), 3), number_col("change " + u, "", 1, true),
        number_col("CI low " + u, "", 1, true), number_col("CI high " + u, "", 1, true),
        number_col("detectable +-" + u, "", 1)}) {
    table.columns.push_back(col);
  }
  Column rounds{"rounds BASE/NEW"};
  rounds.align = Align::right;
  table.columns.push_back(rounds);
  table.columns.push_back(Column{"verdict"});
  table.columns.push_back(Column{"rounds needed", "", CellType::integer});
  const double k = change_scale(c.metric);
  for (const CaseChange& ch : c.changes) {
    std::vector<Cell> row = key_cells(ch.key);
    for (const double v : {ch.base_median * scale, ch.new_median * scale, ch.change * k,
                           ch.ci_low * k, ch.ci_high * k, ch.detectable * k}) {
      row.push_back(Cell::of_real(v));
    }
    row.push_back(Cell::of(rounds_cell(ch)));
    row.push_back(Cell::of(to_string(ch.verdict)));
    row.push_back(ch.rounds_needed > 0 ? Cell::of_int(ch.rounds_needed) : Cell::none());
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::vector<std::string> md_epilogue(const Comparison& c) {
  std::vector<std::string> lines = {
      "", "A case " + direction_text(c) +
              " (95% bootstrap interval over rounds of median(NEW)/median(BASE) - 1: each of " +
              std::to_string(kBootstrapResamples) +
              " resamples draws each file's rounds of the case with replacement and pools their "
              "iterations, so the interval includes the drift between rounds)."};
  const std::string warning = compare_drift_warning(c);
  if (!warning.empty())
    lines.insert(lines.end(), {"", "**NOTE: " + warning + "** (marked * above)."});
  auto list = [&lines](const char* title, const std::vector<std::string>& items) {
    lines.emplace_back();
    lines.push_back(std::string(title) + ":" + (items.empty() ? " none" : ""));
    for (const std::string& item : items) lines.push_back("- " + item);
  };
  std::vector<std::string> items;
  for (const UnmatchedCase& u : c.only_base) items.push_back(u.key.text() + " (case " + u.id + ")");
  list("Only in BASE", items);
  items.clear();
  for (const UnmatchedCase& u : c.only_new) items.push_back(u.key.text() + " (case " + u.id + ")");
  list("Only in NEW", items);
  items.clear();
  for (const NotComparable& n : c.not_comparable) items.push_back(n.key.text() + ": " + n.reason);
  list("Not comparable", items);
  if (c.skipped > 0) {
    lines.insert(lines.end(), {"", "Skipped: " + std::to_string(c.skipped) +
                                       " matched case(s): " + c.skipped_reason + "."});
  }
  lines.insert(lines.end(), {"", compare_result_line(c)});
  return lines;
}

// CSV and JSON: every case, compared or not, its verdict saying which; full precision.
Table script_table(const Comparison& c) {
  const double scale = display_scale(c.metric);
  Table table{"cases", key_columns(), {}, {}};
  table.columns.insert(table.columns.end(), {Column{"base_id"}, Column{"new_id"}});
  for (const char* name : {"base_median", "new_median"}) {
    table.columns.push_back(number_col(name, unit(c.metric), 3));
  }
  for (const char* name : {"change", "ci_low", "ci_high"}) {
    table.columns.push_back(number_col(name, change_unit(c.metric), 1));
  }
  table.columns.insert(
      table.columns.end(),
      {Column{"verdict"}, Column{"base_rounds", "", CellType::integer},
       Column{"new_rounds", "", CellType::integer}, Column{"base_resampled"},
       Column{"new_resampled"}, Column{"note"}, number_col("detectable", change_unit(c.metric), 1),
       Column{"rounds_needed", "", CellType::integer}});
  auto add = [&table](const CaseKey& key, const std::string& base_id, const std::string& new_id,
                      std::vector<Cell> numbers, const char* verdict, std::vector<Cell> rounds,
                      const std::string& note, std::vector<Cell> power = {}) {
    std::vector<Cell> row = key_cells(key);
    row.insert(row.end(), {Cell::of(base_id), Cell::of(new_id)});
    numbers.resize(5);
    rounds.resize(4);
    row.insert(row.end(), numbers.begin(), numbers.end());
    row.push_back(Cell::of(verdict));
    row.insert(row.end(), rounds.begin(), rounds.end());
    row.push_back(Cell::of(note));
    power.resize(2);
    row.insert(row.end(), power.begin(), power.end());
    table.rows.push_back(std::move(row));
  };
  const double k = change_scale(c.metric);
  for (const CaseChange& ch : c.changes) {
    add(ch.key, ch.base_id, ch.new_id,
        {Cell::of_real(ch.base_median * scale), Cell::of_real(ch.new_median * scale),
         Cell::of_real(ch.change * k), Cell::of_real(ch.ci_low * k), Cell::of_real(ch.ci_high * k)},
        verdict_token(ch.verdict),
        {Cell::of_int(ch.base_rounds), Cell::of_int(ch.new_rounds),
         Cell::of(resampled(ch.base_rounds)), Cell::of(resampled(ch.new_rounds))},
        drift_note(ch),
        {Cell::of_real(ch.detectable * k),
         ch.rounds_needed > 0 ? Cell::of_int(ch.rounds_needed) : Cell::none()});
  }
  for (const UnmatchedCase& u : c.only_base) add(u.key, u.id, "", {}, "only_in_base", {}, "");
  for (const UnmatchedCase& u : c.only_new) add(u.key, "", u.id, {}, "only_in_new", {}, "");
  for (const NotComparable& n : c.not_comparable) {
    add(n.key, n.base_id, n.new_id, {}, "not_comparable", {}, n.reason);
  }
  return table;
}

void add_side_facts(std::vector<Fact>& facts, const char* prefix, const CompareSide& side) {
  const SystemInfo& s = side.file.system;
  const std::string p = prefix;
  for (const auto& [key, value] : std::vector<std::pair<const char*, std::string>>{
           {"file", side.path},
           {"hosts", hosts_of(s)},
           {"backend", s.backend},
           {"transport", s.transport},
           {"link_emulation", s.link_emulation},
           {"timer", s.timer},
           {"git_commit", side.file.run.git_commit},
           {"created_utc", side.file.run.created_utc}}) {
    facts.push_back({p + key, Cell::of(value)});
  }
  facts.push_back({p + "world_size", Cell::of_int(s.world_size)});
}

std::vector<Fact> facts(const Comparison& c, const CompareSide& base, const CompareSide& next) {
  std::vector<Fact> out = {{"metric", Cell::of(to_string(c.metric))},
                           {"unit", Cell::of(unit(c.metric))},
                           {"threshold_pct", Cell::of_real(c.threshold_pct)},
                           {"confidence", Cell::of_real(0.95)},
                           {"resamples", Cell::of_int(kBootstrapResamples)},
                           {"interval", Cell::of(interval_text())},
                           {"min_rounds", Cell::of_int(kMinBootstrapRounds)},
                           {"drift_ignored", Cell::of_int(drift_ignored(c))}};
  add_side_facts(out, "base_", base);
  add_side_facts(out, "new_", next);
  const SystemInfo &b = base.file.system, &n = next.file.system;
  out.push_back({"link_emulation_differs", Cell::of_bool(b.link_emulation != n.link_emulation)});
  out.push_back({"timer_differs", Cell::of_bool(b.timer != n.timer)});
  out.push_back({"skipped", Cell::of_int(c.skipped)});
  out.push_back({"skipped_reason", Cell::of(c.skipped_reason)});
  out.push_back({"regressed", Cell::of_int(c.count(Verdict::regressed))});
  out.push_back({"improved", Cell::of_int(c.count(Verdict::improved))});
  return out;
}

}  // namespace

TableDocument compare_document(const Comparison& c, const CompareSide& base,
                               const CompareSide& next, TableFormat format) {
  TableDocument doc;
  doc.title = "fobench compare: " + std::string(to_string(c.metric)) +
              " (median over iterations, " + unit(c.metric) + "), threshold " +
              fixed(c.threshold_pct, 1) + "%";
  if (format == TableFormat::csv || format == TableFormat::json) {
    doc.facts = facts(c, base, next);
    doc.tables.push_back(script_table(c));
    return doc;
  }
  doc.prose = {side_line(base), side_line(next)};
  for (const SettingDifference& d : setting_differences(base.file.system, next.file.system)) {
    doc.prose.emplace_back();
    doc.prose.push_back("**WARNING: the " + d.setting + " differs** (BASE: " + d.base +
                        "; NEW: " + d.next + "): " + d.consequence + ".");
  }
  doc.tables.push_back(people_table(c));
  doc.epilogue = md_epilogue(c);
  // LaTeX shows no epilogue: the verdict goes with the comments above its table.
  if (format == TableFormat::latex) doc.prose.push_back(compare_result_line(c));
  return doc;
}

TableDocument prediction_document(const PredictionCheck& check, const CompareSide& measured,
                                  const CompareSide& simulated) {
  TableDocument doc;
  doc.title = "fobench compare: predicted against measured";
  double sum = 0, worst = 0;
  std::string worst_case;
  Table table{"", key_columns(), {}, {}};
  for (Column col : {number_col("measured T", "ms", 3), number_col("predicted T", "ms", 3),
                     number_col("error", "%", 1, true)}) {
    table.columns.push_back(col);
  }
  for (const Prediction& p : check.cases) {
    std::vector<Cell> row = key_cells(p.key);
    for (const double v : {p.measured * 1e3, p.predicted * 1e3, p.error * 100}) {
      row.push_back(Cell::of_real(v));
    }
    table.rows.push_back(std::move(row));
    if (!std::isfinite(p.error)) continue;
    sum += std::fabs(p.error);
    if (std::fabs(p.error) >= worst) {
      worst = std::fabs(p.error);
      worst_case = p.key.text();
    }
  }
  const double mean = check.cases.empty() ? 0 : sum / static_cast<double>(check.cases.size());
  doc.facts = {{"measured_file", Cell::of(measured.path)},
               {"simulated_file", Cell::of(simulated.path)},
               {"machine", Cell::of(check.machine)},
               {"mean_abs_error_pct", Cell::of_real(mean * 100)},
               {"max_abs_error_pct", Cell::of_real(worst * 100)}};
  doc.prose = {"- MEASURED: `" + measured.path + "`",
               "- SIMULATED: `" + simulated.path + "` with " + check.machine,
               "- error = predicted / measured - 1, of the median step time T"};
  doc.tables.push_back(std::move(table));
  doc.epilogue = {"", "Mean |error| " + fixed(mean * 100, 1) + "%, largest " +
                          fixed(worst * 100, 1) + "% (" + worst_case + "); " +
                          std::to_string(check.only_measured.size()) + " case(s) measured only, " +
                          std::to_string(check.only_predicted.size()) + " predicted only."};
  return doc;
}

}  // namespace fob
