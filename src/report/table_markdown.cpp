// Tables as GitHub Markdown: one line per row, every value on one line and a '|' in a value
// escaped, so that no string from a results file can break the table.
#include <ostream>

#include "core/json_text.h"
#include "table_writer.h"

namespace fob {
namespace {

std::string md_text(const std::string& text) {
  std::string out;
  for (const char ch : one_line_text(text))
    out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

const CellStyle kMarkdown{"-", "true", "false", md_text, false};

const char* rule(const Column& column) {
  switch (resolved_align(column)) {
    case Align::right:
      return "---:|";
    case Align::center:
      return ":---:|";
    case Align::automatic:
    case Align::left:
      break;
  }
  return "---|";
}

class MarkdownWriter final : public TableWriter {
 public:
  void write(std::ostream& out, const TableDocument& doc) const override {
    if (!doc.title.empty()) out << "# " << md_text(doc.title) << "\n\n";
    for (const std::string& line : doc.prose) out << line << "\n";
    for (const Table& table : doc.tables) write_one(out, table);
    for (const std::string& line : doc.epilogue) out << line << "\n";
  }

 private:
  static void write_one(std::ostream& out, const Table& table) {
    out << "\n";
    if (!table.title.empty()) out << "## " << md_text(table.title) << "\n\n";
    out << "|";
    for (const Column& c : table.columns) out << " " << md_text(c.label()) << " |";
    out << "\n|";
    for (const Column& c : table.columns) out << rule(c);
    out << "\n";
    for (const std::vector<Cell>& row : table.rows) {
      out << "|";
      out << " ";
      write_row(out, table, row, " | ", kMarkdown);
      out << " |";
      out << "\n";
    }
    for (const std::string& note : table.notes) out << "\n" << note << "\n";
  }
};

}  // namespace

extern const TableFormatDef kMarkdownFormat{"md",
                                            "Markdown: the tables and notes for people (default)",
                                            TableLayout::people, table_writer_of<MarkdownWriter>};

}  // namespace fob
