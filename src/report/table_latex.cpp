// Tables as LaTeX booktabs tables (the paper's form; needs \usepackage{booktabs}), one table
// environment per table, the document's title and prose as comments. Every text is escaped, so
// a name with '_' or '%' sets as written.
#include <ostream>

#include "core/json_text.h"
#include "table_writer.h"

namespace fob {
namespace {

std::string tex_escape(const std::string& text) {
  std::string out;
  for (const char ch : one_line_text(text)) {
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

const CellStyle kLatex{"--", "yes", "no", tex_escape, false, true};

char spec(const Column& column) {
  switch (resolved_align(column)) {
    case Align::right:
      return 'r';
    case Align::center:
      return 'c';
    case Align::automatic:
    case Align::left:
      break;
  }
  return 'l';
}

class LatexWriter final : public TableWriter {
 public:
  void write(std::ostream& out, const TableDocument& doc) const override {
    out << "% " << one_line_text(doc.title) << " -- needs \\usepackage{booktabs}\n";
    for (const std::string& line : doc.prose) out << "% " << one_line_text(line) << "\n";
    for (const Table& table : doc.tables) write_one(out, table);
  }

 private:
  static void write_one(std::ostream& out, const Table& table) {
    out << "\\begin{table}[ht]\n\\centering\n";
    if (!table.title.empty()) out << "\\caption{" << tex_escape(table.title) << "}\n";
    out << "\\begin{tabular}{";
    for (const Column& c : table.columns) out << spec(c);
    out << "}\n\\toprule\n";
    for (size_t i = 0; i < table.columns.size(); ++i) {
      out << (i ? " & " : "") << tex_escape(table.columns[i].label());
    }
    out << " \\\\\n\\midrule\n";
    for (const std::vector<Cell>& row : table.rows) {
      write_row(out, table, row, " & ", kLatex);
      out << " \\\\\n";
    }
    out << "\\bottomrule\n\\end{tabular}\n\\end{table}\n\n";
  }
};

}  // namespace

extern const TableFormatDef kLatexFormat{
    "latex", "LaTeX: booktabs tables for a paper, the notes as comments", TableLayout::typeset,
    table_writer_of<LatexWriter>};

}  // namespace fob
