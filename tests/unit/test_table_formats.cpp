// Every entry of the table-format table (src/report/table_formats.cpp), whichever it is: a
// well-formed entry, every document a command writes rendered in it, and every command's
// --format taking it. A new format is covered here the moment its registry line exists.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../common/cli_call.h"
#include "../common/temp_dir.h"
#include "app/sim_tune.h"
#include "compare_fixtures.h"
#include "fob/compare_report.h"
#include "fob/hardware.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/table.h"

namespace fob {
namespace {

using compare_fixtures::file_of;
using compare_fixtures::rounds_case;

class TableFormats : public ::testing::TestWithParam<TableFormat> {};

TEST_P(TableFormats, EntryIsWellFormed) {
  const TableFormat format = GetParam();
  ASSERT_NE(format->name, nullptr);
  EXPECT_TRUE(std::regex_match(format->name, std::regex("[a-z][a-z0-9_]*"))) << format->name;
  EXPECT_NE(format->name, std::string("junit")) << "junit is compare's own format";
  ASSERT_NE(format->description, nullptr);
  EXPECT_GT(std::string(format->description).size(), 10u);
  ASSERT_NE(format->writer, nullptr);
  EXPECT_EQ(parse_table_format(format->name), format);
  int same_name = 0;
  for (const TableFormat other : all_table_formats())
    same_name += other->name == std::string(format->name);
  EXPECT_EQ(same_name, 1) << format->name << " is in the format table twice";
  EXPECT_NE((", " + table_format_choices() + ",").find(", " + std::string(format->name) + ","),
            std::string::npos);
}

// What report, compare, sim --tune and report --hardware write, in this format: each document
// comes out, holding its cases.
TEST_P(TableFormats, EveryDocumentRenders) {
  const TableFormat format = GetParam();
  const ResultFile base = file_of({rounds_case({10e-3, 10e-3, 10e-3}, 4, 0.01, 1)});
  const ResultFile next = file_of({rounds_case({12e-3, 12e-3, 12e-3}, 4, 0.01, 7)});
  std::ostringstream report, compared, tuned, hardware;
  write_report(report, next, format);
  const Comparison c = compare_results(base, next, CompareMetric::t, 5);
  write_table(compared,
              compare_document(c, {"BASE", "base.h5", base}, {"NEW", "new.h5", next}, format),
              format);
  write_table(tuned, tune_document(next, summarize(next.cases)), format);
  write_table(hardware, hardware_document(next), format);
  for (const std::string& text : {report.str(), compared.str()}) {
    EXPECT_NE(text.find("flash"), std::string::npos) << format->name << ":\n" << text;
  }
  EXPECT_FALSE(tuned.str().empty());
  EXPECT_FALSE(hardware.str().empty());
}

// Every command with --format takes the format: sim, sim --tune and report on a file sim wrote,
// and compare, whose arguments are checked before it reads a file.
TEST_P(TableFormats, EveryCommandOffersIt) {
  const std::string name = GetParam()->name;
  const TempDir dir;
  const std::string smoke = source_file("bench_configs/smoke.yaml");
  const std::string machine = source_file("bench_configs/machines/cpu_shm.yaml");
  const std::string file = dir.file("sim.h5"), err = dir.file("err");
  const std::vector<std::string> sim = {"sim",     "-c", smoke,      "--machine", machine,
                                        "--world", "2",  "--format", name};
  std::vector<std::string> tune = sim, written = sim;
  tune.push_back("--tune");
  written.insert(written.end(), {"-o", file});
  for (const std::vector<std::string>& args : {sim, tune, written}) {
    const CliOutcome got = call_cli(args, err);
    EXPECT_EQ(got.code, 0) << name << ": " << got.err;
  }
  const CliOutcome report = call_cli({"report", "--format", name, file}, err);
  EXPECT_EQ(report.code, 0) << name << ": " << report.err;
  const CliOutcome compare =
      call_cli({"compare", "--format", name, dir.file("none.h5"), dir.file("nor.h5")}, err);
  EXPECT_EQ(compare.err.find("--format"), std::string::npos) << name << ": " << compare.err;
  EXPECT_NE(compare.err.find("none.h5"), std::string::npos) << compare.err;
}

INSTANTIATE_TEST_SUITE_P(Registry, TableFormats, ::testing::ValuesIn(all_table_formats()),
                         [](const ::testing::TestParamInfo<TableFormat>& info) {
                           return std::string(info.param->name);
                         });

}  // namespace
}  // namespace fob
