// The paper-style report (docs/DESIGN.md sections 3 and 8) as Markdown, CSV, JSON or LaTeX.
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

#include "fob/config.h"
#include "fob/report.h"
#include "fob/types.h"
#include "fob/workload.h"
#include "json_text.h"

namespace fob {

ReportFormat parse_report_format(const std::string& text) {
  if (text == "md") return ReportFormat::md;
  if (text == "csv") return ReportFormat::csv;
  if (text == "json") return ReportFormat::json;
  if (text == "latex") return ReportFormat::latex;
  throw InputError("--format: unknown value '" + text + "' (valid choices: md, csv, json, latex)");
}

namespace {

// The case fields a report can group by, in the order tables list them.
const char* const kCaseFields[] = {"workload", "batch", "seq",   "hidden",  "ffn",
                                   "heads",    "dtype", "world", "strategy"};

bool numeric_field(const std::string& name) {
  return name != "workload" && name != "dtype" && name != "strategy";
}

std::string field_value(const Summary& s, const std::string& name) {
  if (name == "workload") return s.workload;
  if (name == "strategy") return s.strategy;
  if (name == "dtype") return s.dtype;
  if (name == "batch") return std::to_string(s.batch);
  if (name == "seq") return std::to_string(s.seq);
  if (name == "hidden") return std::to_string(s.hidden);
  if (name == "ffn") return std::to_string(s.ffn);
  if (name == "heads") return std::to_string(s.heads);
  if (name == "world") return std::to_string(s.world);
  return "";
}

}  // namespace

std::vector<std::string> parse_group_by(const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string field = text.substr(start, end - start);
    bool known = false;
    for (const char* f : kCaseFields) known |= field == f;
    if (!known) {
      std::string choices;
      for (const char* f : kCaseFields) choices += (choices.empty() ? "" : ", ") + std::string(f);
      throw InputError("--group-by: unknown field '" + field + "' (valid choices: " + choices +
                       ")");
    }
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

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

// The one number format shared by CSV and JSON: enough digits to round-trip a float64 of
// measured seconds to well below timer resolution. Empty for NaN/inf; callers map that.
std::string number(double value) {
  if (!std::isfinite(value)) return "";
  return format("%.9g", value);
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
  return {{"git_commit", r.git_commit},
          {"created_utc", r.created_utc},
          {"command_line", r.command_line},
          {"backend", s.backend},
          {"transport", s.transport},
          {"world_size", std::to_string(s.world_size)},
          {"hostnames", join_list(split_unique(s.hostnames), ",")},
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
          {"t", kStepNote}};
}

// ---- one table row, shared by CSV and JSON --------------------------------------------------

struct Cell {
  enum Kind { text, integer, real, flag } kind;
  std::string s;
  double x = 0;
  int64_t i = 0;
};

Cell text_cell(std::string s) {
  return Cell{Cell::text, std::move(s)};
}
Cell int_cell(int64_t i) {
  return Cell{Cell::integer, {}, 0, i};
}
Cell real_cell(double x) {
  return Cell{Cell::real, {}, x};
}
Cell ms_cell(double seconds) {
  return real_cell(seconds * 1e3);
}
Cell flag_cell(int32_t verified) {
  return Cell{Cell::flag, {}, 0, verified};
}

std::vector<std::pair<const char*, Cell>> row(const Summary& s) {
  return {{"case_id", text_cell(s.case_id)},
          {"workload", text_cell(s.workload)},
          {"strategy", text_cell(s.strategy)},
          {"batch", int_cell(s.batch)},
          {"seq", int_cell(s.seq)},
          {"hidden", int_cell(s.hidden)},
          {"ffn", int_cell(s.ffn)},
          {"heads", int_cell(s.heads)},
          {"dtype", text_cell(s.dtype)},
          {"world", int_cell(s.world)},
          {"iters", int_cell(s.iters)},
          {"verified", flag_cell(s.verified)},
          {"t_ms", ms_cell(s.t_median)},
          {"t_min_ms", ms_cell(s.t_min)},
          {"t_p90_ms", ms_cell(s.t_p90)},
          {"t_p99_ms", ms_cell(s.t_p99)},
          {"t_cv", real_cell(s.t_cv)},
          {"t_comp_ms", ms_cell(s.t_comp)},
          {"t_comm_ms", ms_cell(s.t_comm)},
          {"t_lb_ms", ms_cell(s.t_lb)},
          {"exposed_comm_ms", ms_cell(s.exposed_comm)},
          {"slicing_penalty_ms", ms_cell(s.slicing_penalty)},
          {"speedup", real_cell(s.speedup)},
          {"ideal_speedup", real_cell(s.ideal_speedup)},
          {"comm_reduction", real_cell(s.comm_reduction)},
          {"e2e_reduction", real_cell(s.e2e_reduction)},
          {"overlap_efficiency", real_cell(s.overlap_efficiency)},
          {"hidden_frac", real_cell(s.hidden_frac)},
          {"overlap_pct", real_cell(s.overlap_pct)},
          {"tflops", real_cell(s.tflops)},
          {"algbw_gbps", real_cell(s.algbw)},
          {"busbw_gbps", real_cell(s.busbw)},
          {"concurrency", real_cell(s.concurrency)}};
}

// ---- CSV ------------------------------------------------------------------------------------

std::string csv_cell(const Cell& c) {
  switch (c.kind) {
    case Cell::text:
      return csv_field(one_line_text(c.s));
    case Cell::integer:
      return std::to_string(c.i);
    case Cell::real:
      return number(c.x);
    case Cell::flag:
      return c.i < 0 ? "" : std::to_string(c.i);
  }
  return "";
}

void write_csv(std::ostream& out, const ResultFile& file, const std::vector<Summary>& rows) {
  for (const auto& [key, value] : header_pairs(file)) {
    out << "# " << key << ": " << one_line_text(value) << "\n";
  }
  bool first = true;
  for (const auto& [key, cell] : row(Summary{})) {
    out << (first ? "" : ",") << key;
    first = false;
  }
  out << "\n";
  for (const Summary& s : rows) {
    first = true;
    for (const auto& [key, cell] : row(s)) {
      out << (first ? "" : ",") << csv_cell(cell);
      first = false;
    }
    out << "\n";
  }
}

// ---- JSON -----------------------------------------------------------------------------------

std::string json_cell(const Cell& c) {
  switch (c.kind) {
    case Cell::text:
      return json_string(c.s);
    case Cell::integer:
      return std::to_string(c.i);
    case Cell::real: {
      std::string n = number(c.x);
      return n.empty() ? "null" : n;
    }
    case Cell::flag:
      return c.i < 0 ? "null" : (c.i ? "true" : "false");
  }
  return "null";
}

void write_json(std::ostream& out, const ResultFile& file, const std::vector<Summary>& rows) {
  const SystemInfo& s = file.system;
  const RunInfo& r = file.run;
  auto obj = [&](const std::vector<std::pair<std::string, std::string>>& fields,
                 const char* indent) {
    out << "{\n";
    for (size_t i = 0; i < fields.size(); ++i) {
      out << indent << "  " << json_string(fields[i].first) << ": " << fields[i].second
          << (i + 1 < fields.size() ? ",\n" : "\n");
    }
    out << indent << "}";
  };
  out << "{\n  \"system\": ";
  obj({{"backend", json_string(s.backend)},
       {"transport", json_string(s.transport)},
       {"world_size", std::to_string(s.world_size)},
       {"hostnames", json_string(s.hostnames)},
       {"devices", json_string(s.devices)},
       {"mpi_version", json_string(s.mpi_version)},
       {"nccl_version", json_string(s.nccl_version)},
       {"cuda_version", json_string(s.cuda_version)},
       {"blas", json_string(s.blas)},
       {"link_emulation", json_string(s.link_emulation)},
       {"timer", json_string(s.timer)},
       {"simulated", json_string(s.simulated)},
       {"env", json_string(s.env)}},
      "  ");
  out << ",\n  \"run\": ";
  obj({{"git_commit", json_string(r.git_commit)},
       {"created_utc", json_string(r.created_utc)},
       {"command_line", json_string(r.command_line)},
       {"config_yaml", json_string(r.config_yaml)},
       {"overlap_pct_definition", json_string(kOverlapNote)},
       {"concurrency_definition", json_string(kConcurrencyNote)},
       {"t_definition", json_string(kStepNote)}},
      "  ");
  out << ",\n  \"cases\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    out << (i ? ",\n    {" : "\n    {");
    bool first = true;
    for (const auto& [key, cell] : row(rows[i])) {
      out << (first ? "" : ", ") << json_string(key) << ": " << json_cell(cell);
      first = false;
    }
    out << "}";
  }
  out << (rows.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

// ---- Markdown -------------------------------------------------------------------------------

std::string md_num(double value, const char* fmt) {
  return std::isfinite(value) ? format(fmt, value) : "-";
}
std::string md_ms(double seconds) {
  return md_num(seconds * 1e3, "%.3f");
}
std::string md_pct(double fraction) {
  return md_num(fraction * 100.0, "%.1f");
}
std::string md_x(double ratio) {
  return md_num(ratio, "%.3f");
}

// The cells that tell a table's rows apart: one line each, and a '|' in a value stays in it.
std::string md_cells(const Summary& s, const std::vector<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) {
    out += out.empty() ? "" : " | ";
    for (const char ch : one_line_text(field_value(s, f)))
      out += ch == '|' ? "\\|" : std::string(1, ch);
  }
  return out;
}

std::string md_verified(int32_t v) {
  return v < 0 ? "-" : (v ? "pass" : "FAIL");
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
  title += has_attention(s.workload) ? " heads=" + std::to_string(s.heads)
                                     : " f=" + std::to_string(s.ffn);
  return title + " " + s.dtype + " N=" + std::to_string(s.world);
}

std::vector<Group> make_groups(const std::vector<Summary>& rows,
                               const std::vector<std::string>& group_by) {
  const bool by_shape = group_by.empty();
  std::vector<std::string> keys = group_by;
  if (by_shape) {
    for (const char* f : kCaseFields) {
      if (std::string(f) != "strategy") keys.push_back(f);
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
    for (const char* f : kCaseFields) {
      if (std::find(keys.begin(), keys.end(), f) != keys.end()) continue;
      bool varies = std::string(f) == "strategy";
      for (const Summary* r : g.rows) varies |= field_value(*r, f) != field_value(*g.rows[0], f);
      if (varies) g.label_fields.push_back(f);
    }
  }
  return groups;
}

// csv and json list every row; grouped, rows of a group are adjacent, groups in order of first
// appearance, numbers compared as numbers.
std::vector<Summary> ordered_by(std::vector<Summary> rows, const std::vector<std::string>& fields) {
  if (fields.empty()) return rows;
  std::stable_sort(rows.begin(), rows.end(), [&](const Summary& a, const Summary& b) {
    for (const std::string& f : fields) {
      const std::string x = field_value(a, f), y = field_value(b, f);
      if (x == y) continue;
      if (numeric_field(f)) return std::stoll(x) < std::stoll(y);
      return x < y;
    }
    return false;
  });
  return rows;
}

void write_md(std::ostream& out, const ResultFile& file, const std::vector<Group>& groups,
              bool empty) {
  const SystemInfo& s = file.system;
  const RunInfo& r = file.run;
  // Every string from the file is shown as one line: no raw ESC, CR or LF reaches the reader.
  auto or_dash = [](const std::string& v) { return v.empty() ? "-" : one_line_text(v); };

  out << "# fobench report\n\n";
  if (!s.simulated.empty()) {
    // Predictions must never pass for measurements.
    out << "> **SIMULATED: predicted by fobench sim with " << one_line_text(s.simulated)
        << "; no time here was measured**\n\n";
  }
  if (s.link_emulated()) {
    // Emulated numbers describe the emulated link, not this machine; nobody should miss that.
    out << "> **EMULATED link: " << or_dash(link_detail(s)) << "**\n\n";
  }
  out << "- machine: " << or_dash(join_list(split_unique(s.hostnames), ", ")) << "\n";
  out << "- backend: " << or_dash(s.backend) << ", transport: " << or_dash(s.transport)
      << ", world size: " << s.world_size << "\n";
  if (!s.devices.empty())
    out << "- devices: " << or_dash(join_list(split_unique(s.devices), ", ")) << "\n";
  out << "- link: "
      << (s.link_emulated() ? "EMULATED link: " + or_dash(link_detail(s)) : "not emulated") << "\n";
  out << "- timer: " << or_dash(s.timer) << "\n";
  out << "- BLAS: " << or_dash(s.blas) << "; MPI: " << or_dash(s.mpi_version);
  if (!s.nccl_version.empty()) out << "; NCCL: " << or_dash(s.nccl_version);
  if (!s.cuda_version.empty()) out << "; CUDA: " << or_dash(s.cuda_version);
  out << "\n";
  if (!r.git_commit.empty() || !r.created_utc.empty()) {
    out << "- commit: " << or_dash(r.git_commit) << ", created: " << or_dash(r.created_utc) << "\n";
  }
  if (!r.command_line.empty()) out << "- command: `" << or_dash(r.command_line) << "`\n";
  out << "- " << kStepNote << "\n";
  out << "- " << kOverlapNote << "\n";
  out << "- " << kConcurrencyNote << "\n";
  if (!s.notes.empty()) out << "- **note:** " << or_dash(s.notes) << "\n";

  if (empty) out << "\nNo cases in this file.\n";
  for (const Group& group : groups) {
    out << "\n## " << or_dash(group.title) << "\n\n";
    out << "| " << join_list(group.label_fields, " | ")
        << " | T (ms) | T_comp (ms) | T_comm (ms) | T_lb (ms) | exposed_comm (ms) "
           "| comm_reduction (%) | e2e_reduction (%) | speedup (x) | ideal_speedup (x) "
           "| overlap_efficiency (%) | hidden (%) | concurrency (%) | verified |\n";
    out << "|";
    for (size_t i = 0; i < group.label_fields.size(); ++i) out << "---|";
    out << "---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n";
    std::vector<const Summary*> comm_only;
    for (const Summary* row : group.rows) {
      out << "| " << md_cells(*row, group.label_fields) << " | " << md_ms(row->t_median) << " | "
          << md_ms(row->t_comp) << " | " << md_ms(row->t_comm) << " | " << md_ms(row->t_lb) << " | "
          << md_ms(row->exposed_comm) << " | " << md_pct(row->comm_reduction) << " | "
          << md_pct(row->e2e_reduction) << " | " << md_x(row->speedup) << " | "
          << md_x(row->ideal_speedup) << " | " << md_pct(row->overlap_efficiency) << " | "
          << md_pct(row->hidden_frac) << " | " << md_pct(row->concurrency) << " | "
          << md_verified(row->verified) << " |\n";
      if (std::isfinite(row->busbw)) comm_only.push_back(row);
    }
    // What nccl-tests users compare interconnects by.
    for (const Summary* row : comm_only) {
      out << "\n"
          << or_dash(row_label(*row, group.label_fields, " ")) << ": algbw "
          << md_num(row->algbw, "%.2f") << " GB/s, busbw " << md_num(row->busbw, "%.2f")
          << " GB/s\n";
    }
  }
}

// ---- LaTeX ----------------------------------------------------------------------------------

std::string tex_escape(const std::string& text) {
  std::string out;
  for (char ch : one_line_text(text)) {
    switch (ch) {
      case '_':
      case '%':
      case '&':
      case '#':
      case '$':
      case '{':
      case '}':
        out += '\\';
        out += ch;
        break;
      case '\\':
        out += "\\textbackslash{}";
        break;
      case '~':
        out += "\\textasciitilde{}";
        break;
      case '^':
        out += "\\textasciicircum{}";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// "7.1 (-83.9\%)": the paper's form, a time and its reduction against baseline.
std::string tex_ms_with_reduction(double seconds, double reduction) {
  if (!std::isfinite(seconds)) return "--";
  std::string cell = format("%.1f", seconds * 1e3);
  if (std::isfinite(reduction) && reduction != 0) {
    cell += format(" ($%+.1f$\\%%)", -reduction * 100.0);
  }
  return cell;
}

// One booktabs table per group in the paper's Table 1 form (needs \usepackage{booktabs}).
void write_latex(std::ostream& out, const ResultFile& file, const std::vector<Group>& groups) {
  const SystemInfo& s = file.system;
  const std::string link =
      s.link_emulated() ? "EMULATED link: " + link_detail(s) : "link not emulated";
  out << "% fobench report -- needs \\usepackage{booktabs}\n";
  if (!s.simulated.empty()) out << "% SIMULATED with " << one_line_text(s.simulated) << "\n";
  out << "% " << kStepNote << "\n";
  out << "% timer: " << one_line_text(s.timer) << "\n";
  if (!s.notes.empty()) out << "% note: " << one_line_text(s.notes) << "\n";
  for (const Group& group : groups) {
    out << "\\begin{table}[ht]\n\\centering\n";
    out << "\\caption{" << (s.simulated.empty() ? "" : "SIMULATED. ") << tex_escape(group.title)
        << ". " << tex_escape(join_list(split_unique(s.hostnames), ", ")) << ", backend "
        << tex_escape(s.backend) << ", transport " << tex_escape(s.transport) << ", "
        << tex_escape(link) << ", timer " << tex_escape(s.timer)
        << ". Median step time; comm.\\ overhead is $T - T_{comp}$; reductions against "
           "baseline.}\n";
    out << "\\begin{tabular}{" << std::string(group.label_fields.size(), 'l') << "rrrrc}\n";
    out << "\\toprule\n";
    for (const std::string& f : group.label_fields) out << tex_escape(f) << " & ";
    out << "comm.\\ overhead (ms) & end-to-end (ms) & $T_{lb}$ (ms) & speedup & verified "
           "\\\\\n\\midrule\n";
    for (const Summary* row : group.rows) {
      out << tex_escape(row_label(*row, group.label_fields, " & ")) << " & "
          << tex_ms_with_reduction(row->exposed_comm, row->comm_reduction) << " & "
          << tex_ms_with_reduction(row->t_median, row->e2e_reduction) << " & "
          << (std::isfinite(row->t_lb) ? format("%.1f", row->t_lb * 1e3) : "--") << " & "
          << (std::isfinite(row->speedup) ? format("%.2f", row->speedup) : "--") << " & "
          << (row->verified < 0 ? "--"
              : row->verified   ? "pass"
                                : "FAIL")
          << " \\\\\n";
    }
    out << "\\bottomrule\n\\end{tabular}\n\\end{table}\n\n";
  }
}

}  // namespace

void write_report(std::ostream& out, const ResultFile& file, ReportFormat format,
                  const std::vector<std::string>& group_by) {
  const std::vector<Summary> rows = summarize(file);
  switch (format) {
    case ReportFormat::md:
      write_md(out, file, make_groups(rows, group_by), rows.empty());
      break;
    case ReportFormat::latex:
      write_latex(out, file, make_groups(rows, group_by));
      break;
    case ReportFormat::csv:
      write_csv(out, file, ordered_by(rows, group_by));
      break;
    case ReportFormat::json:
      write_json(out, file, ordered_by(rows, group_by));
      break;
  }
}

}  // namespace fob
