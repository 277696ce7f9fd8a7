// Tables as one JSON shape for every command: {"title", "meta": {facts}, "tables": [{"title",
// "columns": [{"name", "unit", "type"}], "rows": [{key: value}]}]}. Numbers are numbers, a
// value that is absent or not finite is null, strings are escaped to valid UTF-8.
#include <ostream>

#include "core/json_text.h"
#include "table_writer.h"

namespace fob {
namespace {

const CellStyle kJson{"null", "true", "false", json_string, true};

class JsonWriter final : public TableWriter {
 public:
  void write(std::ostream& out, const TableDocument& doc) const override {
    const Column plain{};
    out << "{\n  \"title\": " << json_string(doc.title) << ",\n  \"meta\": {";
    for (size_t i = 0; i < doc.facts.size(); ++i) {
      out << (i ? ",\n    " : "\n    ") << json_string(doc.facts[i].key) << ": "
          << styled_cell(plain, doc.facts[i].value, kJson);
    }
    out << (doc.facts.empty() ? "},\n" : "\n  },\n") << "  \"tables\": [";
    for (size_t t = 0; t < doc.tables.size(); ++t) {
      out << (t ? ",\n" : "\n");
      write_one(out, doc.tables[t]);
    }
    out << (doc.tables.empty() ? "]\n}\n" : "\n  ]\n}\n");
  }

 private:
  static void write_one(std::ostream& out, const Table& table) {
    out << "    {\n      \"title\": " << json_string(table.title) << ",\n      \"columns\": [";
    for (size_t i = 0; i < table.columns.size(); ++i) {
      const Column& c = table.columns[i];
      out << (i ? ", " : "") << "{\"name\": " << json_string(c.key())
          << ", \"unit\": " << json_string(c.unit) << ", \"type\": \"" << cell_type_name(c.type)
          << "\"}";
    }
    out << "],\n      \"rows\": [";
    for (size_t r = 0; r < table.rows.size(); ++r) {
      out << (r ? ",\n        {" : "\n        {");
      const std::vector<Cell>& row = table.rows[r];
      for (size_t i = 0; i < row.size() && i < table.columns.size(); ++i) {
        out << (i ? ", " : "") << json_string(table.columns[i].key()) << ": "
            << styled_cell(table.columns[i], row[i], kJson);
      }
      out << "}";
    }
    out << (table.rows.empty() ? "]\n    }" : "\n      ]\n    }");
  }
};

}  // namespace

extern const TableFormatDef kJsonFormat{"json",
                                        "JSON: facts and typed rows under stable keys, for scripts",
                                        TableLayout::data, table_writer_of<JsonWriter>};

}  // namespace fob
