// The table model's writers: every format, typed cells, units in headers, escaping, and the one
// --format parser.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

#include "fob/table.h"
#include "fob/types.h"

namespace fob {
namespace {

TableDocument sample() {
  TableDocument doc;
  doc.title = "sample";
  doc.facts = {{"machine", Cell::of("node1")},
               {"ranks", Cell::of_int(4)},
               {"env", Cell::of("A=1\nB=2"), false}};
  doc.prose = {"- a line"};
  Column sign{"change", "%", CellType::real, 1};
  sign.sign = true;
  Table t{
      "shape b=2",
      {Column{"name"}, Column{"world", "", CellType::integer}, Column{"t", "ms", CellType::real, 3},
       sign, Column{"bw", "GB/s", CellType::real, 2}, Column{"ok", "", CellType::boolean}},
      {},
      {}};
  t.rows.push_back({Cell::of("a|b,\"c\"_%&$#{}~^\\"), Cell::of_int(8), Cell::of_real(1.23456789),
                    Cell::of_real(-4.25), Cell::of_real(std::numeric_limits<double>::quiet_NaN()),
                    Cell::of_bool(true)});
  t.rows.push_back({Cell::none(), Cell::of_int(-1), Cell::of_real(2), Cell::of_real(3),
                    Cell::of_real(std::numeric_limits<double>::infinity()), Cell::of_bool(false)});
  doc.tables.push_back(t);
  return doc;
}

std::string render(TableFormat format, const TableDocument& doc = sample()) {
  std::ostringstream out;
  write_table(out, doc, format);
  return out.str();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Table, ColumnKeysAndLabelsCarryTheUnit) {
  EXPECT_EQ(Column("t", "ms").key(), "t_ms");
  EXPECT_EQ(Column("t", "ms").label(), "t (ms)");
  EXPECT_EQ(Column("change", "%").key(), "change_pct");
  EXPECT_EQ(Column("busbw", "GB/s").key(), "busbw_gbps");
  EXPECT_EQ(Column("speedup", "x").key(), "speedup");
  Column c{"t", "ms"};
  c.heading = "T";
  EXPECT_EQ(c.label(), "T (ms)");
}

TEST(Table, MarkdownEscapesPipesAndRoundsToThePrecision) {
  const std::string md = render(parse_table_format("md"));
  EXPECT_EQ(md.rfind("# sample\n\n- a line\n\n## shape b=2\n\n", 0), 0u) << md;
  EXPECT_TRUE(has(md,
                  "| name | world | t (ms) | change (%) | bw (GB/s) | ok |\n"
                  "|---|---:|---:|---:|---:|:---:|\n"))
      << md;
  EXPECT_TRUE(has(md, "| a\\|b,\"c\"_%&$#{}~^\\ | 8 | 1.235 | -4.2 | - | true |")) << md;
  EXPECT_TRUE(has(md, "| - | -1 | 2.000 | +3.0 | - | false |")) << md;
}

TEST(Table, CsvQuotesAndKeepsFullPrecision) {
  const std::string csv = render(parse_table_format("csv"));
  EXPECT_EQ(csv.rfind("# machine: node1\n# ranks: 4\nname,world,t_ms,change_pct,bw_gbps,ok\n", 0),
            0u)
      << csv;
  EXPECT_FALSE(has(csv, "A=1")) << "a fact kept out of the comments leaked: " << csv;
  EXPECT_TRUE(has(csv, "\"a|b,\"\"c\"\"_%&$#{}~^\\\",8,1.23456789,-4.25,,1\n")) << csv;
  EXPECT_TRUE(has(csv, "\n,-1,2,3,,0\n")) << csv;
}

TEST(Table, JsonHasOneShapeNumbersAndNullForNonFinite) {
  const std::string json = render(parse_table_format("json"));
  EXPECT_EQ(json.rfind("{\n  \"title\": \"sample\",\n  \"meta\": {", 0), 0u) << json;
  EXPECT_TRUE(has(json, "\"ranks\": 4")) << json;
  EXPECT_TRUE(has(json, "\"env\": \"A=1\\nB=2\"")) << json;
  EXPECT_TRUE(has(json, "{\"name\": \"t_ms\", \"unit\": \"ms\", \"type\": \"real\"}")) << json;
  EXPECT_TRUE(has(json, "{\"name\": \"ok\", \"unit\": \"\", \"type\": \"boolean\"}")) << json;
  EXPECT_TRUE(has(json,
                  "{\"name\": \"a|b,\\\"c\\\"_%&$#{}~^\\\\\", \"world\": 8, \"t_ms\": "
                  "1.23456789, \"change_pct\": -4.25, \"bw_gbps\": null, \"ok\": true}"))
      << json;
  EXPECT_TRUE(has(json,
                  "{\"name\": null, \"world\": -1, \"t_ms\": 2, \"change_pct\": 3, "
                  "\"bw_gbps\": null, \"ok\": false}"))
      << json;
  EXPECT_FALSE(has(json, "nan")) << json;
  EXPECT_FALSE(has(json, "inf")) << json;
}

TEST(Table, LatexEscapesSpecialCharacters) {
  const std::string tex = render(parse_table_format("latex"));
  EXPECT_EQ(tex.rfind("% sample -- needs \\usepackage{booktabs}\n% - a line\n", 0), 0u) << tex;
  EXPECT_TRUE(has(tex, "\\caption{shape b=2}\n\\begin{tabular}{lrrrrc}\n")) << tex;
  EXPECT_TRUE(has(tex, "name & world & t (ms) & change (\\%) & bw (GB/s) & ok \\\\\n")) << tex;
  EXPECT_TRUE(has(tex,
                  "a|b,\"c\"\\_\\%\\&\\$\\#\\{\\}\\textasciitilde{}\\textasciicircum{}"
                  "\\textbackslash{} & 8 & 1.235 & $-4.2$ & -- & yes \\\\\n"))
      << tex;
  EXPECT_TRUE(has(tex, "-- & $-1$ & 2.000 & $+3.0$ & -- & no \\\\\n")) << tex;
}

TEST(Table, NoStringBreaksALine) {
  TableDocument doc = sample();
  doc.tables[0].rows[0][0] = Cell::of("two\nlines\r\x1b[31m");
  for (const TableFormat f :
       {parse_table_format("md"), parse_table_format("csv"), parse_table_format("latex")}) {
    const std::string out = render(f, doc);
    EXPECT_FALSE(has(out, "\nlines")) << out;
    EXPECT_FALSE(has(out, "\x1b")) << out;
  }
  EXPECT_TRUE(has(render(parse_table_format("json"), doc), "two\\nlines\\r\\u001b[31m"));
}

TEST(Table, EveryFormatParsesAndTheChoicesAreListed) {
  // The built-in formats first, Markdown (the default) leading; a new one follows them.
  EXPECT_EQ(table_format_choices().rfind("md, csv, json, latex", 0), 0u) << table_format_choices();
  for (const std::string& name : table_format_names()) {
    EXPECT_EQ(parse_table_format(name)->name, name);
  }
}

TEST(Table, UnknownFormatNamesKeyValueAndChoices) {
  try {
    parse_table_format("pdf");
    FAIL() << "accepted pdf";
  } catch (const InputError& e) {
    EXPECT_EQ(e.what(),
              "--format: unknown value 'pdf' (valid choices: " + table_format_choices() + ")");
    EXPECT_EQ(table_format_choices().rfind("md, csv, json, latex", 0), 0u);
  }
  EXPECT_THROW(parse_table_format(""), InputError);
  EXPECT_THROW(parse_table_format("MD"), InputError);
}

}  // namespace
}  // namespace fob
