// Tables as CSV (RFC 4180 quoting) under "# key: value" comment lines, one header line of
// column keys per table; a blank line between tables.
#include <ostream>

#include "core/json_text.h"
#include "table_writer.h"

namespace fob {
namespace {

std::string csv_text(const std::string& text) {
  return csv_field(one_line_text(text));
}

const CellStyle kCsv{"", "1", "0", csv_text, true};

class CsvWriter final : public TableWriter {
 public:
  void write(std::ostream& out, const TableDocument& doc) const override {
    const Column plain{};
    for (const Fact& fact : doc.facts) {
      if (!fact.comment) continue;
      const std::string value = fact.value.kind == Cell::Kind::text
                                    ? fact.value.text
                                    : styled_cell(plain, fact.value, kCsv);
      out << "# " << fact.key << ": " << one_line_text(value) << "\n";
    }
    for (size_t t = 0; t < doc.tables.size(); ++t) {
      const Table& table = doc.tables[t];
      if (t > 0) out << "\n";
      for (size_t i = 0; i < table.columns.size(); ++i) {
        out << (i ? "," : "") << csv_field(table.columns[i].key());
      }
      out << "\n";
      for (const std::vector<Cell>& row : table.rows) {
        write_row(out, table, row, ",", kCsv);
        out << "\n";
      }
    }
  }
};

}  // namespace

extern const TableFormatDef kCsvFormat{
    "csv", "CSV: one row per case under # key: value facts, for scripts", TableLayout::data,
    table_writer_of<CsvWriter>};

}  // namespace fob
