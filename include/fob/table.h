// The one table model every command's output goes through (docs/reports.md#one-table-model): a
// document of facts, prose and tables of typed columns, printed by one writer per format.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fob {

class TableWriter;

// How a format lays a document out, which decides what a command puts in it: `people` read it
// (Markdown: prose, tables with notes, an epilogue), `typeset` prints it (LaTeX: the prose as
// comments, tables for a paper, no epilogue) and `data` is for scripts (CSV, JSON: facts and
// typed columns under stable keys).
enum class TableLayout { people, typeset, data };

// A table format: one entry of the format table (src/report/table_formats.cpp), defined in its
// own file src/report/table_<name>.cpp. Every command's --format offers every entry.
struct TableFormatDef {
  const char* name = nullptr;         // --format's value
  const char* description = nullptr;  // one line, for --help
  TableLayout layout = TableLayout::people;
  std::unique_ptr<TableWriter> (*writer)() = nullptr;
};
using TableFormat = const TableFormatDef*;

// The format table, in the order --help and messages list it.
const std::vector<TableFormat>& all_table_formats();
// The entry named `text`; InputError naming --format, the value and the choices.
TableFormat parse_table_format(const std::string& text);
// Whether parse_table_format takes `text`.
bool is_table_format(const std::string& text);
// The choices parse_table_format takes, in order.
std::vector<std::string> table_format_names();
// The choices as one line, "md, csv, json, latex", for messages and --help.
std::string table_format_choices();

enum class CellType { text, integer, real, boolean };
// "text", "integer", "real" or "boolean": how JSON's columns and the results file's
// /summary attribute `report_columns` name a column's type.
const char* cell_type_name(CellType type);

// One value of a row. `none` is a value that is absent: "-" for people, empty in CSV, null in
// JSON.
struct Cell {
  enum class Kind { none, text, integer, real, boolean } kind = Kind::none;
  std::string text;
  int64_t integer = 0;
  double real = 0;
  bool flag = false;

  static Cell none() { return {}; }
  static Cell of(std::string text);
  static Cell of(const char* text) { return of(std::string(text)); }
  static Cell of_int(int64_t value);
  static Cell of_real(double value);
  static Cell of_bool(bool value);
};

enum class Align { automatic, left, right, center };

struct Column {
  Column() = default;
  Column(std::string name_, std::string unit_ = "", CellType type_ = CellType::text,
         int precision_ = 3)
      : name(std::move(name_)), unit(std::move(unit_)), type(type_), precision(precision_) {}

  // The key of CSV headers and JSON rows, which append the unit's token: "t" in "ms" is "t_ms",
  // a percentage "_pct", GB/s "_gbps"; "x" (a ratio) adds nothing.
  std::string name;
  std::string unit;  // "ms", "%", "GB/s", "x"; empty for none
  CellType type = CellType::text;
  int precision = 3;  // a real's digits after the point for people (and in CSV/JSON when digits 0)
  int digits = 9;     // a real's significant digits in CSV and JSON; 0: `precision` decimals
  std::string heading;  // what Markdown and LaTeX call it, unit appended: "T (ms)"; empty: name
  bool sign = false;    // people see a '+' on positive reals (changes)
  Align align = Align::automatic;  // Markdown and LaTeX; automatic: text left, numbers right

  std::string key() const;    // "t_ms"
  std::string label() const;  // "T (ms)"
};

struct Table {
  std::string title;  // Markdown "## title", LaTeX's caption, JSON's "title"
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  // each as many cells as columns
  std::vector<std::string> notes;       // Markdown paragraphs after the table
};

// A fact about the whole document: CSV's "# key: value" lines (unless `comment` is false: a long
// text such as the environment), JSON's "meta" object.
struct Fact {
  std::string key;
  Cell value;
  bool comment = true;
};

struct TableDocument {
  std::string title;
  std::vector<Fact> facts;
  // Lines for people: Markdown before the tables, LaTeX comments. CSV and JSON carry facts.
  std::vector<std::string> prose;
  std::vector<Table> tables;
  std::vector<std::string> epilogue;  // Markdown lines after the tables
};

void write_table(std::ostream& out, const TableDocument& doc, TableFormat format);

}  // namespace fob
