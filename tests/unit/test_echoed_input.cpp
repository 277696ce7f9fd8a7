// What fobench repeats of its input in a message is escaped and cut: a control character is
// shown as \xNN, never sent to the terminal as an escape sequence, and a value past 80
// characters is cut, never repeated whole. And a message about two files says one thing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/cli_call.h"
#include "../common/input_error.h"
#include "../common/temp_dir.h"
#include "fob/config.h"

namespace fob {
namespace {

bool has_control(const std::string& text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) return true;
  }
  return false;
}

TEST(EchoedInput, QuotedValuesShowControlCharactersAsEscapes) {
  EXPECT_EQ(quote_value("a\x1b[31mb"), "'a\\x1b[31mb'");
  EXPECT_EQ(quote_value(std::string("\0\n\x7f", 3)), "'\\x00\\x0a\\x7f'");
  // Cut at 80 characters as shown: 20 escapes of 4.
  const std::string escapes(100, '\x1b');
  std::string twenty;
  for (int i = 0; i < 20; ++i) twenty += "\\x1b";
  EXPECT_EQ(quote_value(escapes), "'" + twenty + "...' (100 bytes)");
  // An escape never cut through.
  EXPECT_EQ(quote_value(std::string(78, 'a') + "\x1b" + "b"),
            "'" + std::string(78, 'a') + "...' (80 bytes)");
}

struct Echo {
  std::string name;
  std::vector<std::string> args;
};

// Each call echoes an argument holding escape sequences, or 100 KB of one.
std::vector<Echo> echoes() {
  const std::string esc = "wor\x1b[31mkloads\x1b]0;title\x07";
  const std::string big(100000, 'a');
  return {
      {"list_escape", {"--list", esc}},
      {"list_big", {"--list", big}},
      {"list_extra", {"--list", "workloads", esc, big}},
      {"run_list", {"run", "--list", esc}},
      {"sim_list", {"sim", "--list", big}},
      {"run_unknown_option", {"run", "--" + esc}},
      {"sim_world",
       {"sim", "--machine", source_file("bench_configs/machines/cpu_shm.yaml"), "--world", esc}},
      {"sim_world_big",
       {"sim", "--machine", source_file("bench_configs/machines/cpu_shm.yaml"), "--world", big}},
      {"sim_workload",
       {"sim", "--machine", source_file("bench_configs/machines/cpu_shm.yaml"), "--workload", esc}},
      {"compare_format", {"compare", "a.h5", "b.h5", "--format", esc}},
      {"compare_metric", {"compare", "a.h5", "b.h5", "--metric", big}},
      {"compare_gate", {"compare", "a.h5", "b.h5", "--gate", esc}},
      {"compare_history", {"compare", "a.h5", "b.h5", "--history", esc}}};
}

TEST(EchoedInput, MessagesHoldNoControlCharacterAndNoHugeValue) {
  const TempDir dir;
  for (const Echo& e : echoes()) {
    const CliOutcome got = call_cli(e.args, dir.file(e.name + ".err"));
    EXPECT_EQ(got.code, kExitBadInput) << e.name << ": " << got.err.substr(0, 400);
    EXPECT_FALSE(has_control(got.err)) << e.name << ": " << quote_value(got.err);
    EXPECT_LT(got.err.size(), 1000u) << e.name << ": " << got.err.substr(0, 400);
    EXPECT_FALSE(got.err.empty()) << e.name;
  }
  const CliOutcome got = call_cli({"--list", "wor\x1b[31mkloads"}, dir.file("list.err"));
  EXPECT_TRUE(contains(got.err, "wor\\x1b[31mkloads")) << got.err;
  EXPECT_TRUE(contains(got.err, "workloads,strategies")) << got.err;
}

// Two files from `fobench sim` hold one exact iteration per case: compare says why it has no
// verdict, instead of "no case of one matches a case of the other; 9 matched case(s) ...".
TEST(EchoedInput, TwoSimulationsGetOneConsistentMessage) {
  const TempDir dir;
  for (const char* name : {"a.h5", "b.h5"}) {
    const CliOutcome made = call_cli(
        {"sim", "-c", source_file("bench_configs/smoke.yaml"), "--machine",
         source_file("bench_configs/machines/cpu_shm.yaml"), "--world", "2", "-o", dir.file(name)},
        dir.file("sim.err"));
    ASSERT_EQ(made.code, 0) << made.err;
  }
  const CliOutcome got =
      call_cli({"compare", dir.file("a.h5"), dir.file("b.h5")}, dir.file("compare.err"));
  EXPECT_EQ(got.code, kExitBadInput) << got.err;
  EXPECT_TRUE(contains(got.err, "BASE and NEW are both simulated")) << got.err;
  EXPECT_FALSE(contains(got.err, "no case of one matches")) << got.err;
}

}  // namespace
}  // namespace fob
