// One writer per table format (table.h), behind one interface, as Google Benchmark has one
// reporter per output format; write_table asks the format for its writer.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "fob/table.h"

namespace fob {

class TableWriter {
 public:
  virtual ~TableWriter() = default;
  virtual void write(std::ostream& out, const TableDocument& doc) const = 0;
};

// A format's writer, for its TableFormatDef: table_writer_of<CsvWriter>.
template <typename Writer>
std::unique_ptr<TableWriter> table_writer_of() {
  return std::make_unique<Writer>();
}

// A number for people: `column.precision` decimals, a '+' on positive changes; empty when not
// finite, which each writer marks its own way.
std::string human_number(const Column& column, const Cell& cell);
// A number for scripts (CSV and JSON): `column.digits` significant digits, or `precision`
// decimals when digits is 0; empty when not finite.
std::string script_number(const Column& column, const Cell& cell);
// How a writer prints each kind of cell.
struct CellStyle {
  const char* absent;  // Cell::none, and a number that is not finite
  const char* yes;
  const char* no;
  std::string (*text)(const std::string&);  // the format's escaping
  bool for_scripts;                         // script_number, else human_number
  bool math_sign = false;                   // a signed number in $...$ (LaTeX's minus)
};
std::string styled_cell(const Column& column, const Cell& cell, const CellStyle& style);
// The row's cells, `separator` between them.
void write_row(std::ostream& out, const Table& table, const std::vector<Cell>& row,
               const char* separator, const CellStyle& style);

// The alignment a column gets when it asks for none.
Align resolved_align(const Column& column);

}  // namespace fob
