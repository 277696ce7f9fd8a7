// The table model's parts shared by every writer: the format names, cells, column names and
// how numbers are printed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <utility>

#include "fob/table.h"
#include "fob/types.h"
#include "table_writer.h"

namespace fob {

std::vector<std::string> table_format_names() {
  std::vector<std::string> names;
  for (const TableFormat format : all_table_formats()) names.emplace_back(format->name);
  return names;
}

std::string table_format_choices() {
  std::string out;
  for (const std::string& name : table_format_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

bool is_table_format(const std::string& text) {
  for (const TableFormat format : all_table_formats()) {
    if (text == format->name) return true;
  }
  return false;
}

TableFormat parse_table_format(const std::string& text) {
  for (const TableFormat format : all_table_formats()) {
    if (text == format->name) return format;
  }
  throw InputError("--format: unknown value '" + text +
                   "' (valid choices: " + table_format_choices() + ")");
}

const char* cell_type_name(CellType type) {
  switch (type) {
    case CellType::integer:
      return "integer";
    case CellType::real:
      return "real";
    case CellType::boolean:
      return "boolean";
    case CellType::text:
      break;
  }
  return "text";
}

namespace {

template <typename T>
Cell cell_of(Cell::Kind kind, T Cell::*member, T value) {
  Cell c;
  c.kind = kind;
  c.*member = std::move(value);
  return c;
}

}  // namespace

Cell Cell::of(std::string text) {
  return cell_of(Kind::text, &Cell::text, std::move(text));
}
Cell Cell::of_int(int64_t value) {
  return cell_of(Kind::integer, &Cell::integer, value);
}
Cell Cell::of_real(double value) {
  return cell_of(Kind::real, &Cell::real, value);
}
Cell Cell::of_bool(bool value) {
  return cell_of(Kind::boolean, &Cell::flag, value);
}

namespace {

// The unit as a key's suffix: what a script's column name can hold.
std::string unit_token(const std::string& unit) {
  if (unit.empty() || unit == "x") return "";
  if (unit == "%") return "pct";
  if (unit == "GB/s") return "gbps";
  std::string out;
  for (const char ch : unit) {
    if (ch == '/') continue;
    out += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  }
  return out;
}

std::string printed(const char* fmt, int precision, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, precision, value);
  return buf;
}

}  // namespace

std::string Column::key() const {
  const std::string token = unit_token(unit);
  return token.empty() ? name : name + "_" + token;
}

std::string Column::label() const {
  const std::string& text = heading.empty() ? name : heading;
  return unit.empty() ? text : text + " (" + unit + ")";
}

std::string human_number(const Column& column, const Cell& cell) {
  if (cell.kind == Cell::Kind::integer) return std::to_string(cell.integer);
  if (!std::isfinite(cell.real)) return "";
  return printed(column.sign ? "%+.*f" : "%.*f", column.precision, cell.real);
}

std::string script_number(const Column& column, const Cell& cell) {
  if (cell.kind == Cell::Kind::integer) return std::to_string(cell.integer);
  if (!std::isfinite(cell.real)) return "";
  if (column.digits == 0) return printed("%.*f", column.precision, cell.real);
  return printed("%.*g", column.digits, cell.real);
}

std::string styled_cell(const Column& column, const Cell& cell, const CellStyle& style) {
  switch (cell.kind) {
    case Cell::Kind::none:
      return style.absent;
    case Cell::Kind::text:
      return style.text(cell.text);
    case Cell::Kind::boolean:
      return cell.flag ? style.yes : style.no;
    case Cell::Kind::integer:
    case Cell::Kind::real:
      break;
  }
  const std::string n =
      style.for_scripts ? script_number(column, cell) : human_number(column, cell);
  if (n.empty()) return style.absent;
  return style.math_sign && (n[0] == '+' || n[0] == '-') ? "$" + n + "$" : n;
}

void write_row(std::ostream& out, const Table& table, const std::vector<Cell>& row,
               const char* separator, const CellStyle& style) {
  for (size_t i = 0; i < row.size() && i < table.columns.size(); ++i) {
    out << (i ? separator : "") << styled_cell(table.columns[i], row[i], style);
  }
}

Align resolved_align(const Column& column) {
  if (column.align != Align::automatic) return column.align;
  if (column.type == CellType::text) return Align::left;
  return column.type == CellType::boolean ? Align::center : Align::right;
}

void write_table(std::ostream& out, const TableDocument& doc, TableFormat format) {
  format->writer()->write(out, doc);
}

}  // namespace fob
