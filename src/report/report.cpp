// The paper-style report (docs/metrics.md, docs/reports.md) as Markdown, CSV, JSON or LaTeX.
//
// CSV and JSON carry the same columns under the same names, formatted by the same function, so
// a script can switch between them; Markdown and LaTeX are for people and round.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/json_text.h"
#include "fob/case_fields.h"
#include "fob/config.h"
#include "fob/hardware.h"
#include "fob/report.h"
#include "fob/table.h"
#include "fob/types.h"
#include "fob/workload.h"
#include "report_columns.h"

namespace fob {

namespace {

// The case fields a report groups by, in the order tables list them: the shape's, then the
// strategy, which tells a group's rows apart.
const std::vector<const CaseField*>& report_fields() {
  static const std::vector<const CaseField*> fields = [] {
    std::vector<const CaseField*> out;
    for (const CaseField& f : case_fields()) out.push_back(&f);
    std::stable_partition(out.begin(), out.end(), [](const CaseField* f) { return f->shape; });
    return out;
  }();
  return fields;
}

// Empty where the case records no value of the field (an MoE field of a case without experts).
std::string field_value(const Summary& s, const CaseField& f) {
  return f.listed(s) ? f.text(s) : "";
}

std::string field_value(const Summary& s, const std::string& name) {
  return field_value(s, *find_case_field(name));
}

void check_group_field(const std::string& field) {
  if (find_case_field(field) != nullptr) return;
  std::string choices;
  for (const CaseField* f : report_fields()) {
    choices += (choices.empty() ? "" : ", ") + std::string(f->name);
  }
  throw InputError("--group-by: unknown field '" + field + "' (valid choices: " + choices + ")");
}

}  // namespace

std::vector<std::string> parse_group_by(const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string field = text.substr(start, end - start);
    check_group_field(field);
    if (std::find(fields.begin(), fields.end(), field) == fields.end()) fields.push_back(field);
    start = end + 1;
  }
  return fields;
}

namespace {

constexpr const char* kOverlapNote =
    "overlap_pct uses IMB-NBC's documented formula (denominator min(T_comm, T_comp))";
constexpr const char* kStepNote = "T is the median over iterations of the slowest rank's step time";
constexpr const char* kConcurrencyNote =
    "concurrency is the share of comm-task busy time during which the same rank ran a compute "
    "task, as the timer recorded them (median over iterations)";

// "12.34", or "-" when not finite: the bandwidths under a Markdown table.
std::string format_or_dash(double value) {
  if (!std::isfinite(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", value);
  return buf;
}

std::vector<std::string> split_unique(const std::string& list) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty() && seen.insert(item).second) out.push_back(item);
    start = end + 1;
  }
  return out;
}

// "emulated: 10 Gbit/s, 5 us latency" -> "10 Gbit/s, 5 us latency"
std::string link_detail(const SystemInfo& sys) {
  const std::string prefix = "emulated:";
  std::string d = sys.link_emulation;
  if (d.rfind(prefix, 0) == 0) d = d.substr(prefix.size());
  while (!d.empty() && d.front() == ' ') d.erase(d.begin());
  return d;
}

// Header facts shared by CSV comments and JSON.
std::vector<std::pair<std::string, std::string>> header_pairs(const ResultFile& file) {
  const SystemInfo& s = file.system;
  const RunInfo& r = file.run;
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"git_commit", r.git_commit},     {"created_utc", r.created_utc},
      {"command_line", r.command_line}, {"backend", s.backend},
      {"transport", s.transport},       {"world_size", std::to_string(s.world_size)}};
  // Only where known: the CPU backend's files say nothing of copy engines and SMs.
  if (s.copy_engines >= 0) pairs.emplace_back("copy_engines", std::to_string(s.copy_engines));
  if (const int32_t sms = files_transfer_sms(file.cases); sms >= 0) {
    pairs.emplace_back("transfer_sms", std::to_string(sms));
  }
  pairs.insert(pairs.end(),
               {{"hostnames", join_list(split_unique(s.hostnames), ",")},
                {"devices", s.devices},
                {"mpi_version", s.mpi_version},
                {"nccl_version", s.nccl_version},
                {"cuda_version", s.cuda_version},
                {"blas", s.blas},
                {"link_emulation", s.link_emulation.empty() ? "none" : s.link_emulation},
                {"timer", s.timer},
                {"notes", s.notes},
                {"simulated", s.simulated},
                {"overlap_pct", kOverlapNote},
                {"concurrency", kConcurrencyNote},
                {"t", kStepNote}});
  return pairs;
}

// ---- the table for scripts (CSV and JSON): every case, every column --------------------------

std::vector<Column> script_columns() {
  std::vector<Column> columns;
  for (const ReportColumn& c : report_columns()) columns.push_back(c.column);
  return columns;
}

// In the order of script_columns().
std::vector<Cell> script_row(const Summary& s) {
  std::vector<Cell> cells;
  for (const ReportColumn& c : report_columns()) cells.push_back(report_cell(c, s));
  return cells;
}

// The header facts that are counts, typed as integers in JSON.
bool integer_fact(const std::string& key) {
  return key == "world_size" || key == "copy_engines" || key == "transfer_sms";
}

TableDocument script_document(const ResultFile& file, const std::vector<Summary>& rows) {
  TableDocument doc;
  doc.title = "fobench report";
  for (const auto& [key, value] : header_pairs(file)) {
    doc.facts.push_back(
        {key, integer_fact(key) ? Cell::of_int(std::stoll(value)) : Cell::of(value)});
  }
  // Long texts: in JSON for scripts that need them, not in CSV's comment lines.
  doc.facts.push_back({"env", Cell::of(file.system.env), false});
  doc.facts.push_back({"config_yaml", Cell::of(file.run.config_yaml), false});
  Table table{"cases", script_columns(), {}, {}};
  for (const Summary& s : rows) table.rows.push_back(script_row(s));
  doc.tables.push_back(std::move(table));
  return doc;
}

// ---- tables of Markdown and LaTeX ---------------------------------------------------------

// Rows that share the values of the group fields, in the order they first appear.
struct Group {
  std::string title;
  std::vector<std::string> label_fields;  // what tells the rows apart: strategy, varying fields
  std::vector<const Summary*> rows;
};

std::string row_label(const Summary& s, const std::vector<std::string>& fields, const char* sep) {
  std::vector<std::string> parts;
  for (const std::string& f : fields) parts.push_back(field_value(s, f));
  return join_list(parts, sep);
}

// The default title: the shape as the paper states it (attention by heads, the rest by ffn).
std::string shape_title(const Summary& s) {
  std::string title = s.workload + " b=" + std::to_string(s.batch) + " s=" + std::to_string(s.seq) +
                      " d=" + std::to_string(s.hidden);
  title +=
      has_heads(s.workload) ? " heads=" + std::to_string(s.heads) : " f=" + std::to_string(s.ffn);
  // The fields only some workloads have (the MoE layer's), by name where they apply.
  for (const CaseField& f : case_fields()) {
    if (!f.recorded_by_every && f.applies(s)) title += " " + std::string(f.name) + "=" + f.text(s);
  }
  return title + " " + s.dtype + " N=" + std::to_string(s.world);
}

std::vector<Group> make_groups(const std::vector<Summary>& rows,
                               const std::vector<std::string>& group_by) {
  const bool by_shape = group_by.empty();
  std::vector<std::string> keys = group_by;
  if (by_shape) {
    for (const CaseField* f : report_fields()) {
      if (f->shape) keys.push_back(f->name);
    }
  }
  std::vector<Group> groups;
  std::map<std::vector<std::string>, size_t> index;
  for (const Summary& row : rows) {
    std::vector<std::string> key;
    for (const std::string& f : keys) key.push_back(field_value(row, f));
    auto [it, inserted] = index.try_emplace(key, groups.size());
    if (inserted) {
      Group g;
      if (by_shape) {
        g.title = shape_title(row);
      } else {
        for (size_t i = 0; i < keys.size(); ++i) {
          g.title += (i ? " " : "") + keys[i] + "=" + key[i];
        }
      }
      groups.push_back(g);
    }
    groups[it->second].rows.push_back(&row);
  }
  // Rows are told apart by their strategy and by every other case field that varies in the
  // group.
  for (Group& g : groups) {
    for (const CaseField* f : report_fields()) {
      if (std::find(keys.begin(), keys.end(), f->name) != keys.end()) continue;
      bool varies = !f->shape;
      for (const Summary* r : g.rows) varies |= field_value(*r, *f) != field_value(*g.rows[0], *f);
      if (varies) g.label_fields.push_back(f->name);
    }
  }
  return groups;
}

// csv and json list every row; grouped, rows of a group are adjacent, groups in order of first
// appearance, numbers compared as numbers.
std::vector<Summary> ordered_by(std::vector<Summary> rows, const std::vector<std::string>& fields) {
  if (fields.empty()) return rows;
  std::stable_sort(rows.begin(), rows.end(), [&](const Summary& a, const Summary& b) {
    for (const std::string& name : fields) {
      const CaseField& f = *find_case_field(name);
      const std::string x = field_value(a, f), y = field_value(b, f);
      if (x == y) continue;
      if (f.type() != CaseFieldType::text) return f.number(a) < f.number(b);
      return x < y;
    }
    return false;
  });
  return rows;
}

std::vector<std::string> md_prose(const ResultFile& file, bool empty) {
  const SystemInfo& s = file.system;
  const RunInfo& r = file.run;
  // Every string from the file is shown as one line: no raw ESC, CR or LF reaches the reader.
  auto or_dash = [](const std::string& v) { return v.empty() ? "-" : one_line_text(v); };
  std::vector<std::string> lines;
  if (!s.simulated.empty()) {
    // Predictions must never pass for measurements.
    lines.push_back("> **SIMULATED: predicted by fobench sim with " + one_line_text(s.simulated) +
                    "; no time here was measured**");
    lines.emplace_back();
  }
  if (s.link_emulated()) {
    // Emulated numbers describe the emulated link, not this machine; nobody should miss that.
    lines.push_back("> **EMULATED link: " + or_dash(link_detail(s)) + "**");
    lines.emplace_back();
  }
  lines.push_back("- machine: " + or_dash(join_list(split_unique(s.hostnames), ", ")));
  lines.push_back("- backend: " + or_dash(s.backend) + ", transport: " +
                  (s.transport.empty() ? "-" : one_line_text(transport_text(file))) +
                  ", world size: " + std::to_string(s.world_size));
  if (!s.devices.empty())
    lines.push_back("- devices: " + or_dash(join_list(split_unique(s.devices), ", ")));
  lines.push_back("- link: " + (s.link_emulated() ? "EMULATED link: " + or_dash(link_detail(s))
                                                  : "not emulated"));
  lines.push_back("- timer: " + or_dash(s.timer));
  std::string libs = "- BLAS: " + or_dash(s.blas) + "; MPI: " + or_dash(s.mpi_version);
  if (!s.nccl_version.empty()) libs += "; NCCL: " + or_dash(s.nccl_version);
  if (!s.cuda_version.empty()) libs += "; CUDA: " + or_dash(s.cuda_version);
  lines.push_back(libs);
  if (!r.git_commit.empty() || !r.created_utc.empty()) {
    lines.push_back("- commit: " + or_dash(r.git_commit) + ", created: " + or_dash(r.created_utc));
  }
  if (!r.command_line.empty()) lines.push_back("- command: `" + or_dash(r.command_line) + "`");
  lines.push_back(std::string("- ") + kStepNote);
  lines.push_back(std::string("- ") + kOverlapNote);
  lines.push_back(std::string("- ") + kConcurrencyNote);
  if (!s.notes.empty()) lines.push_back("- **note:** " + or_dash(s.notes));
  if (const std::string nvlink = nvlink_verdict(file); !nvlink.empty()) {
    lines.push_back("- **NVLink:** " + or_dash(nvlink));
  }
  if (empty) {
    lines.emplace_back();
    lines.push_back("No cases in this file.");
  }
  return lines;
}

Cell verified_cell(int32_t v) {
  return v < 0 ? Cell::none() : Cell::of(v ? "pass" : "FAIL");
}

Column human_col(const char* heading, const char* unit, int precision, bool sign = false) {
  Column c{heading, unit, CellType::real, precision};
  c.sign = sign;
  return c;
}

std::vector<Column> label_columns(const Group& group) {
  std::vector<Column> columns;
  for (const std::string& f : group.label_fields) columns.push_back(Column{f});
  return columns;
}

void add_labels(std::vector<Cell>& cells, const Summary& s, const Group& group) {
  for (const std::string& f : group.label_fields) cells.push_back(Cell::of(field_value(s, f)));
}

// Where the shape sits: below 1 the transfers can hide entirely behind the GEMMs, which is the
// regime the overlapping strategies are for; above it at most T_comp of them can. A CPU run is
// put where the paper's GPU runs are with --link-ratio.
std::string regime_note(const Group& group) {
  for (const Summary* row : group.rows) {
    if (!(row->t_comp > 0) || !std::isfinite(row->t_comm)) continue;
    const double r = row->t_comm / row->t_comp;
    return "T_comm / T_comp = " + format_or_dash(r) +
           (r <= 1 ? ": the transfers could hide entirely behind the GEMMs."
                   : ": more transfer than GEMM time, at most T_comp of it can hide.");
  }
  return "T_comm / T_comp: n/a (no compute_only and comm_only of this shape).";
}

// "1.21-1.27" for a paired ratio's interval, "-" where there is none.
std::string interval_text(double low, double high) {
  if (!std::isfinite(low) || !std::isfinite(high)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.3f-%.3f", low, high);
  return text;
}

// nccl-tests' -a in one cell: each rank's median step, min / avg / max over ranks, in ms.
std::string rank_spread_text(const Summary& s) {
  if (!std::isfinite(s.rank_t_min) || s.world <= 1) return "-";
  char text[96];
  std::snprintf(text, sizeof text, "%.3f / %.3f / %.3f", s.rank_t_min * 1e3, s.rank_t_avg * 1e3,
                s.rank_t_max * 1e3);
  return text;
}

Table md_table(const Group& group) {
  // The case id first: what --case and the results file's /cases/<id> name a row by.
  std::vector<Column> columns{Column{"case"}};
  for (Column& c : label_columns(group)) columns.push_back(std::move(c));
  Table table{group.title, std::move(columns), {}, {}};
  for (const auto& [heading, unit] :
       std::vector<std::pair<const char*, const char*>>{{"T", "ms"},
                                                        {"cv", "%"},
                                                        {"T_comp", "ms"},
                                                        {"T_comm", "ms"},
                                                        {"T_lb", "ms"},
                                                        {"exposed_comm", "ms"},
                                                        {"comm_reduction", "%"},
                                                        {"e2e_reduction", "%"},
                                                        {"speedup", "x"},
                                                        {"ideal_speedup", "x"},
                                                        {"T/T_lb", "x"},
                                                        {"overlap_efficiency", "%"},
                                                        {"hidden", "%"},
                                                        {"concurrency", "%"}}) {
    table.columns.push_back(human_col(heading, unit, std::string(unit) == "%" ? 1 : 3));
  }
  table.columns.push_back(Column{"speedup 95% CI"});
  table.columns.push_back(Column{"ranks min/avg/max", "ms"});
  Column verified{"verified"};
  verified.align = Align::center;
  table.columns.push_back(verified);
  table.columns.push_back(Column{"doubts"});
  const auto ms = [](double seconds) { return Cell::of_real(seconds * 1e3); };
  const auto pct = [](double fraction) { return Cell::of_real(fraction * 100.0); };
  for (const Summary* row : group.rows) {
    std::vector<Cell> cells{Cell::of(row->case_id)};
    add_labels(cells, *row, group);
    for (const Cell& c :
         {ms(row->t_median), pct(row->t_cv), ms(row->t_comp), ms(row->t_comm), ms(row->t_lb),
          ms(row->exposed_comm), pct(row->comm_reduction), pct(row->e2e_reduction),
          Cell::of_real(row->speedup), Cell::of_real(row->ideal_speedup),
          Cell::of_real(row->t_over_tlb), pct(row->overlap_efficiency), pct(row->hidden_frac),
          pct(row->concurrency)}) {
      cells.push_back(c);
    }
    cells.push_back(Cell::of(interval_text(row->speedup_ci_low, row->speedup_ci_high)));
    cells.push_back(Cell::of(rank_spread_text(*row)));
    cells.push_back(verified_cell(row->verified));
    cells.push_back(Cell::of(row->doubts));
    table.rows.push_back(std::move(cells));
    // What nccl-tests users compare interconnects by.
    if (std::isfinite(row->busbw)) {
      const std::string label = row_label(*row, group.label_fields, " ");
      table.notes.push_back((label.empty() ? "-" : one_line_text(label)) + ": algbw " +
                            format_or_dash(row->algbw) + " GB/s, busbw " +
                            format_or_dash(row->busbw) + " GB/s");
    }
  }
  table.notes.push_back(regime_note(group));
  return table;
}

// The paper's Table 1 form: a change against baseline beside each time.
Table latex_table(const Group& group, const ResultFile& file) {
  const SystemInfo& s = file.system;
  const std::string link =
      s.link_emulated() ? "EMULATED link: " + link_detail(s) : "link not emulated";
  Table table{(s.simulated.empty() ? "" : "SIMULATED. ") + group.title + ". " +
                  join_list(split_unique(s.hostnames), ", ") + ", backend " + s.backend +
                  ", transport " + transport_text(file) + ", " + link + ", timer " + s.timer +
                  ". Median step time; comm. overhead is T - T_comp; changes against baseline.",
              label_columns(group),
              {},
              {}};
  for (Column c :
       {human_col("comm. overhead", "ms", 1), human_col("change", "%", 1, true),
        human_col("end-to-end", "ms", 1), human_col("change", "%", 1, true),
        human_col("cv", "%", 1), human_col("T_lb", "ms", 1), human_col("speedup", "", 2)}) {
    table.columns.push_back(c);
  }
  Column verified{"verified"};
  verified.align = Align::center;
  table.columns.push_back(verified);
  table.columns.push_back(Column{"doubts"});
  for (const Summary* row : group.rows) {
    std::vector<Cell> cells;
    add_labels(cells, *row, group);
    for (const double v :
         {row->exposed_comm * 1e3, -row->comm_reduction * 100.0, row->t_median * 1e3,
          -row->e2e_reduction * 100.0, row->t_cv * 100.0, row->t_lb * 1e3, row->speedup}) {
      cells.push_back(Cell::of_real(v));
    }
    cells.push_back(verified_cell(row->verified));
    cells.push_back(Cell::of(row->doubts));
    table.rows.push_back(std::move(cells));
  }
  return table;
}

TableDocument people_document(const ResultFile& file, const std::vector<Group>& groups,
                              TableFormat format, bool empty) {
  TableDocument doc;
  doc.title = "fobench report";
  const SystemInfo& s = file.system;
  if (format->layout == TableLayout::people) {
    doc.prose = md_prose(file, empty);
    for (const Group& g : groups) doc.tables.push_back(md_table(g));
    return doc;
  }
  if (!s.simulated.empty()) doc.prose.push_back("SIMULATED with " + s.simulated);
  doc.prose.push_back(kStepNote);
  doc.prose.push_back("timer: " + s.timer);
  if (!s.notes.empty()) doc.prose.push_back("note: " + s.notes);
  if (const std::string nvlink = nvlink_verdict(file); !nvlink.empty()) {
    doc.prose.push_back("NVLink: " + nvlink);
  }
  for (const Group& g : groups) doc.tables.push_back(latex_table(g, file));
  return doc;
}

}  // namespace

void write_report(std::ostream& out, const ResultFile& file, TableFormat format,
                  const std::vector<std::string>& group_by) {
  for (const std::string& field : group_by) check_group_field(field);
  const std::vector<Summary> rows = summarize(file);
  if (format->layout == TableLayout::data) {
    write_table(out, script_document(file, ordered_by(rows, group_by)), format);
    return;
  }
  write_table(out, people_document(file, make_groups(rows, group_by), format, rows.empty()),
              format);
}

}  // namespace fob
