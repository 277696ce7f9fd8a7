// `fobench compare`'s table (fob/compare.h): the comparison as a document of the table model,
// one table of people's columns for Markdown and LaTeX, one of every column for CSV and JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fob/case_fields.h"
#include "fob/compare.h"
#include "fob/compare_report.h"
#include "fob/speed_probe.h"
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

// The case fields a table lists: those any of its cases records (the MoE fields only where a
// case has experts).
std::vector<const CaseField*> key_fields(const std::vector<const CaseKey*>& keys) {
  std::vector<const CaseField*> fields;
  for (const CaseField& f : case_fields()) {
    if (f.recorded_by_every ||
        std::any_of(keys.begin(), keys.end(), [&](const CaseKey* k) { return f.listed(*k); })) {
      fields.push_back(&f);
    }
  }
  return fields;
}

template <typename Row>
std::vector<const CaseField*> key_fields_of(const std::vector<Row>& rows) {
  std::vector<const CaseKey*> keys;
  for (const Row& r : rows) keys.push_back(&r.key);
  return key_fields(keys);
}

std::vector<Cell> key_cells(const CaseKey& k, const std::vector<const CaseField*>& fields) {
  std::vector<Cell> cells;
  for (const CaseField* f : fields) {
    if (!f->listed(k)) {
      cells.push_back(Cell::none());
    } else if (f->type() == CaseFieldType::text) {
      cells.push_back(Cell::of(f->text(k)));
    } else if (f->type() == CaseFieldType::real) {
      cells.push_back(Cell::of_real(f->number(k)));
    } else {
      cells.push_back(Cell::of_int(static_cast<int64_t>(f->number(k))));
    }
  }
  return cells;
}

// The case's fields; people read them left-aligned, as the key they are.
std::vector<Column> key_columns(const std::vector<const CaseField*>& fields) {
  std::vector<Column> columns;
  for (const CaseField* f : fields) {
    Column c{f->name};
    if (f->type() == CaseFieldType::integer) c.type = CellType::integer;
    if (f->type() == CaseFieldType::real) {
      c.type = CellType::real;
      c.precision = 2;
    }
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
    case Verdict::too_few_rounds:
      return "too_few_rounds";
    case Verdict::no_regression:
      return "no_regression";
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
         "%; no regression when only its better end lies past " + t +
         "% (a change for the worse past it is ruled out, which is what the gate asks); "
         "inconclusive otherwise: the files cannot tell a change of that size from noise "
         "(`detectable` is the interval's half-width; `rounds needed` what would narrow it to the "
         "threshold)";
}

// Why a case was not judged, or which rounds it left out for a slow phase; empty otherwise.
std::string rounds_note(const CaseChange& ch) {
  if (ch.verdict == Verdict::too_few_rounds) {
    return "fewer than " + std::to_string(kMinCompareRounds) + " rounds on a side (BASE " +
           std::to_string(ch.base_rounds) + ", NEW " + std::to_string(ch.new_rounds) +
           "): no spread between rounds to judge a run's drift by; run with --rounds 10";
  }
  if (ch.base_slow + ch.new_slow == 0) return {};
  return "left out for a slow phase of the machine (the speed probe around the slot past " +
         fixed(kSlowPhaseFactor, 1) + "x the file's median): " + std::to_string(ch.base_slow) +
         " round(s) of BASE, " + std::to_string(ch.new_slow) + " of NEW";
}

int slow_cases(const Comparison& c) {
  return static_cast<int>(
      std::count_if(c.changes.begin(), c.changes.end(),
                    [](const CaseChange& ch) { return ch.base_slow + ch.new_slow > 0; }));
}

std::string interval_text() {
  return "95% rank-based (Hodges-Lehmann, Mann-Whitney) interval of the change of the rounds' "
         "medians (log scale; a difference for exposed_comm), never narrower than the iterations' "
         "(robust) spread within rounds; a side with fewer than " +
         std::to_string(kMinCompareRounds) + " rounds is not judged";
}

// "5/5", or "3 (+2 slow)/5" where rounds were left out for a slow phase.
std::string rounds_cell(const CaseChange& ch) {
  const auto side = [](int rounds, int slow) {
    return std::to_string(rounds) +
           (slow > 0 ? " (+" + std::to_string(slow) + " slow)" : std::string());
  };
  return side(ch.base_rounds, ch.base_slow) + "/" + side(ch.new_rounds, ch.new_slow);
}

}  // namespace

std::string compare_result_line(const Comparison& c) {
  return compare_result_line(std::vector<Comparison>{c});
}

std::string compare_result_line(const std::vector<Comparison>& parts) {
  const Comparison& c = parts.front();
  const GateResult g = gate_result(parts, c.inconclusive_as);
  const auto decided = [&parts](Verdict v) {
    int n = 0;
    for (const Comparison& part : parts) n += part.role == GateRole::decides ? part.count(v) : 0;
    return std::to_string(n);
  };
  std::string line = std::string("Result: ") + to_string(g.verdict) + ": " + g.reason + " (" +
                     decided(Verdict::regressed) + " regressed, " + decided(Verdict::improved) +
                     " improved, " + decided(Verdict::no_change) + " no change, " +
                     decided(Verdict::inconclusive) + " inconclusive, " +
                     decided(Verdict::too_few_rounds) + " too few rounds, " +
                     std::to_string(c.only_base.size()) + " missing from NEW)";
  if (g.verdict == GateVerdict::inconclusive && c.inconclusive_as != InconclusiveAs::inconclusive) {
    line += "; counted as " +
            std::string(c.inconclusive_as == InconclusiveAs::pass ? "PASS" : "FAIL") +
            " by --inconclusive-as (exit " + std::to_string(g.exit_code) + ")";
  }
  // Every case the verdict rests on, one a line: the regressed ones (a FAIL, or an INCONCLUSIVE
  // that other work could explain), or else the unsure ones with what would narrow them.
  const bool rests_on_regressed =
      g.verdict == GateVerdict::fail ||
      (g.verdict == GateVerdict::inconclusive && decided(Verdict::regressed) != "0");
  const Verdict listed = rests_on_regressed ? Verdict::regressed : Verdict::inconclusive;
  for (const Comparison& part : parts) {
    if (part.role != GateRole::decides) continue;
    const std::string of = parts.size() > 1 ? std::string(to_string(part.metric)) + " of " : "";
    for (const CaseChange& ch : part.changes) {
      if (ch.verdict != listed) continue;
      line += "\n  - " + of + ch.key.text();
      if (listed == Verdict::regressed || ch.rounds_needed <= 0) continue;
      line += " (detectable +-" + fixed(ch.detectable * change_scale(part.metric), 1) +
              change_unit(part.metric) + "; about " + std::to_string(ch.rounds_needed) +
              " rounds per file would narrow it to the threshold)";
    }
  }
  return line;
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
         transport_text(side.file) + ", link " + s.link_emulation + ", timer " + s.timer +
         ", git " + side.file.run.git_commit + ", created " + side.file.run.created_utc;
}

// Markdown and LaTeX: the compared cases, rounded.
Table people_table(const Comparison& c) {
  const double scale = display_scale(c.metric);
  const std::string metric = to_string(c.metric);
  const std::vector<const CaseField*> fields = key_fields_of(c.changes);
  Table table{"", key_columns(fields), {}, {}};
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
    std::vector<Cell> row = key_cells(ch.key, fields);
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
  std::vector<std::string> lines = {"", "A case " + direction_text(c) + " (" + interval_text() +
                                            ": a slow phase moves a whole round, so the spread "
                                            "between rounds is what a run's drift is judged by)."};
  if (const int slow = slow_cases(c); slow > 0) {
    lines.insert(lines.end(),
                 {"", std::to_string(slow) +
                          " case(s) left out rounds whose slot ran in a slow phase of the machine "
                          "(the host speed probe around it took more than " +
                          fixed(kSlowPhaseFactor, 1) +
                          "x the file's median probe; `(+N slow)` in `rounds BASE/NEW`): named, "
                          "not averaged in."});
  }
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
  std::vector<const CaseKey*> keys;
  for (const CaseChange& ch : c.changes) keys.push_back(&ch.key);
  for (const auto* side : {&c.only_base, &c.only_new}) {
    for (const UnmatchedCase& u : *side) keys.push_back(&u.key);
  }
  for (const NotComparable& n : c.not_comparable) keys.push_back(&n.key);
  const std::vector<const CaseField*> fields = key_fields(keys);
  Table table{"cases", key_columns(fields), {}, {}};
  table.columns.insert(table.columns.end(), {Column{"base_id"}, Column{"new_id"}});
  for (const char* name : {"base_median", "new_median"}) {
    table.columns.push_back(number_col(name, unit(c.metric), 3));
  }
  for (const char* name : {"change", "ci_low", "ci_high"}) {
    table.columns.push_back(number_col(name, change_unit(c.metric), 1));
  }
  table.columns.insert(table.columns.end(),
                       {Column{"verdict"}, Column{"base_rounds", "", CellType::integer},
                        Column{"new_rounds", "", CellType::integer},
                        Column{"base_slow_rounds", "", CellType::integer},
                        Column{"new_slow_rounds", "", CellType::integer}, Column{"note"},
                        number_col("detectable", change_unit(c.metric), 1),
                        Column{"rounds_needed", "", CellType::integer}});
  auto add = [&table, &fields](const CaseKey& key, const std::string& base_id,
                               const std::string& new_id, std::vector<Cell> numbers,
                               const char* verdict, std::vector<Cell> rounds,
                               const std::string& note, std::vector<Cell> power = {}) {
    std::vector<Cell> row = key_cells(key, fields);
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
        {Cell::of_int(ch.base_rounds), Cell::of_int(ch.new_rounds), Cell::of_int(ch.base_slow),
         Cell::of_int(ch.new_slow)},
        rounds_note(ch),
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
  if (s.copy_engines >= 0) facts.push_back({p + "copy_engines", Cell::of_int(s.copy_engines)});
  if (const int32_t sms = files_transfer_sms(side.file.cases); sms >= 0) {
    facts.push_back({p + "transfer_sms", Cell::of_int(sms)});
  }
}

std::vector<Fact> facts(const std::vector<Comparison>& parts, const CompareSide& base,
                        const CompareSide& next) {
  const Comparison& c = parts.front();
  std::vector<Fact> out = {{"metric", Cell::of(to_string(c.metric))},
                           {"unit", Cell::of(unit(c.metric))},
                           {"threshold_pct", Cell::of_real(c.threshold_pct)},
                           {"confidence", Cell::of_real(0.95)},
                           {"interval", Cell::of(interval_text())},
                           {"min_rounds", Cell::of_int(kMinCompareRounds)}};
  add_side_facts(out, "base_", base);
  add_side_facts(out, "new_", next);
  const SystemInfo &b = base.file.system, &n = next.file.system;
  out.push_back({"transport_differs", Cell::of_bool(b.transport != n.transport)});
  out.push_back({"link_emulation_differs", Cell::of_bool(b.link_emulation != n.link_emulation)});
  out.push_back({"timer_differs", Cell::of_bool(b.timer != n.timer)});
  out.push_back({"host_speed_ratio", Cell::of_real(c.host_speed_ratio())});
  out.push_back({"base_host_others_cpus", Cell::of_real(c.base_load)});
  out.push_back({"new_host_others_cpus", Cell::of_real(c.new_load)});
  out.push_back({"skipped", Cell::of_int(c.skipped)});
  out.push_back({"skipped_reason", Cell::of(c.skipped_reason)});
  out.push_back({"regressed", Cell::of_int(c.count(Verdict::regressed))});
  out.push_back({"improved", Cell::of_int(c.count(Verdict::improved))});
  out.push_back({"too_few_rounds", Cell::of_int(c.count(Verdict::too_few_rounds))});
  out.push_back({"missing_from_new", Cell::of_int(static_cast<int>(c.only_base.size()))});
  const GateResult g = gate_result(parts, c.inconclusive_as);
  out.push_back({"gate_figures", Cell::of(parts.size() > 1 ? "interconnect" : "all")});
  out.push_back({"gate", Cell::of(to_string(g.verdict))});
  out.push_back({"gate_reason", Cell::of(g.reason)});
  out.push_back({"exit_code", Cell::of_int(g.exit_code)});
  return out;
}

}  // namespace

TableDocument compare_document(const Comparison& c, const CompareSide& base,
                               const CompareSide& next, TableFormat format) {
  return compare_document(std::vector<Comparison>{c}, base, next, format);
}

TableDocument compare_document(const std::vector<Comparison>& parts, const CompareSide& base,
                               const CompareSide& next, TableFormat format) {
  const Comparison& c = parts.front();
  TableDocument doc;
  doc.title = "fobench compare: " + std::string(to_string(c.metric)) +
              " (median over iterations, " + unit(c.metric) + "), threshold " +
              fixed(c.threshold_pct, 1) + "%";
  const bool script = format->layout == TableLayout::data;
  // A gate of several parts titles each table with its figure and what it does to the verdict.
  for (const Comparison& part : parts) {
    doc.tables.push_back(script ? script_table(part) : people_table(part));
    if (parts.size() > 1) {
      doc.tables.back().title = std::string(to_string(part.metric)) + ": " + to_string(part.role);
    }
  }
  if (script) {
    doc.facts = facts(parts, base, next);
    return doc;
  }
  doc.prose = {side_line(base), side_line(next)};
  for (const SettingDifference& d : setting_differences(base.file.system, next.file.system)) {
    doc.prose.emplace_back();
    doc.prose.push_back("**WARNING: the " + d.setting + " differs** (BASE: " + d.base +
                        "; NEW: " + d.next + "): " + d.consequence + ".");
  }
  if (const std::string note = host_speed_note(c); !note.empty()) {
    doc.prose.emplace_back();
    doc.prose.push_back("**WARNING: " + note + ".**");
  }
  doc.epilogue = md_epilogue(c);
  doc.epilogue.back() = compare_result_line(parts);
  // LaTeX shows no epilogue: the verdict goes with the comments above its table.
  if (format->layout == TableLayout::typeset) doc.prose.push_back(compare_result_line(parts));
  return doc;
}

TableDocument prediction_document(const PredictionCheck& check, const CompareSide& measured,
                                  const CompareSide& simulated) {
  TableDocument doc;
  doc.title = "fobench compare: predicted against measured";
  double sum = 0, worst = 0;
  std::string worst_case;
  const std::vector<const CaseField*> fields = key_fields_of(check.cases);
  Table table{"", key_columns(fields), {}, {}};
  for (Column col : {number_col("measured T", "ms", 3), number_col("predicted T", "ms", 3),
                     number_col("error", "%", 1, true)}) {
    table.columns.push_back(col);
  }
  for (const Prediction& p : check.cases) {
    std::vector<Cell> row = key_cells(p.key, fields);
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
