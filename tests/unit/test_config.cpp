// YAML config parsing and validation (docs/cli.md): keys set fields, unknown keys and
// bad values name the key, its line and the valid choices, and the shipped configs are valid.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../common/input_error.h"
#include "fob/config.h"
#include "fob/config_keys.h"
#include "fob/strategy.h"
#include "fob/types.h"
#include "fob/workload.h"

namespace fob {
namespace {

TEST(ApplyYaml, SetsEveryField) {
  Config c;
  apply_yaml(c,
             "workload: gemm_rs\n"
             "batch: 3\n"
             "seq: 64\n"
             "hidden: 128\n"
             "ffn: 256\n"
             "dtype: bf16\n"
             "strategies: [baseline, flash:2]\n"
             "iters: 7\n"
             "warmup: 0\n"
             "backend: cpu\n"
             "transport: mpi\n"
             "link_gbps: 2.5\n"
             "link_latency_us: 10\n"
             "verify: false\n"
             "timeout: 30\n"
             "seed: 42\n"
             "blas_threads: 2\n"
             "output: out.h5\n",
             "test.yaml");
  EXPECT_EQ(c.workload, find_workload("gemm_rs"));
  EXPECT_EQ(c.shape.batch, 3);
  EXPECT_EQ(c.shape.seq, 64);
  EXPECT_EQ(c.shape.hidden, 128);
  EXPECT_EQ(c.shape.ffn, 256);
  EXPECT_EQ(c.ffn(), 256);
  EXPECT_EQ(c.dtype, DType::bf16);
  EXPECT_EQ(c.strategies, (std::vector<std::string>{"baseline", "flash:2"}));
  EXPECT_EQ(c.iters, 7);
  EXPECT_EQ(c.warmup, 0);
  EXPECT_EQ(c.backend, "cpu");
  EXPECT_EQ(c.transport, "mpi");
  EXPECT_DOUBLE_EQ(c.link.gbps, 2.5);
  EXPECT_DOUBLE_EQ(c.link.latency_us, 10);
  EXPECT_FALSE(c.verify);
  EXPECT_DOUBLE_EQ(c.timeout, 30);
  EXPECT_EQ(c.seed, 42u);
  EXPECT_EQ(c.blas_threads, 2);
  EXPECT_EQ(c.output, "out.h5");
  EXPECT_NO_THROW(validate_config(c));
}

TEST(ApplyYaml, StrategiesAsCommaString) {
  Config c;
  apply_yaml(c, "strategies: \"decompose, slicing:2 ,flash_direct\"\n", "s.yaml");
  EXPECT_EQ(c.strategies, (std::vector<std::string>{"decompose", "slicing:2", "flash_direct"}));
  apply_yaml(c, "strategies: flash\n", "s.yaml");
  EXPECT_EQ(c.strategies, (std::vector<std::string>{"flash"}));
}

TEST(ApplyYaml, KeysNotGivenKeepTheirValues) {
  Config c;
  const Config defaults;
  apply_yaml(c, "hidden: 64\n", "k.yaml");
  EXPECT_EQ(c.shape.hidden, 64);
  EXPECT_EQ(c.shape.batch, defaults.shape.batch);
  EXPECT_EQ(c.strategies, defaults.strategies);
  EXPECT_EQ(c.iters, defaults.iters);
  EXPECT_EQ(c.ffn(), 4 * 64);  // ffn 0 means 4 * hidden
}

TEST(ApplyYaml, EmptyDocumentChangesNothing) {
  Config c;
  EXPECT_NO_THROW(apply_yaml(c, "", "empty.yaml"));
  EXPECT_NO_THROW(apply_yaml(c, "# only a comment\n", "empty.yaml"));
  EXPECT_EQ(c.iters, Config().iters);
}

// Found by the config fuzzer: yaml-cpp's conversion of such a key escaped as exit 3.
TEST(ApplyYaml, AKeyThatIsAListOrMappingIsBadInput) {
  for (const char* text :
       {"batch: 2\n? [a]\n: 1\n", "cases:\n  - {? {x: 1}: 2}\n", "? [a]\n: 1\n? [b]\n: 2\n"}) {
    Config c;
    const std::string msg = input_error([&] { apply_yaml(c, text, "cfg.yaml"); });
    EXPECT_TRUE(contains(msg, "a key must be a name")) << text << ": " << msg;
  }
}

TEST(ApplyYaml, UnknownKeyNamesKeyLineAndValidKeys) {
  Config c;
  const std::string msg =
      input_error([&] { apply_yaml(c, "batch: 2\nseq: 4\nbogus: 1\nhidden: 8\n", "cfg.yaml"); });
  EXPECT_TRUE(contains(msg, "bogus")) << msg;
  EXPECT_TRUE(contains(msg, "cfg.yaml:3")) << msg;
  for (const char* key : {"workload", "strategies", "link_gbps", "blas_threads", "output"}) {
    EXPECT_TRUE(contains(msg, key)) << key << " not listed in: " << msg;
  }
}

TEST(ApplyYaml, BadDtypeNamesKeyAndChoices) {
  Config c;
  const std::string msg = input_error([&] { apply_yaml(c, "dtype: int8\n", "d.yaml"); });
  EXPECT_TRUE(contains(msg, "dtype")) << msg;
  EXPECT_TRUE(contains(msg, "int8")) << msg;
  EXPECT_TRUE(contains(msg, "d.yaml:1")) << msg;
  for (const char* d : {"fp32", "fp64", "bf16", "fp16"}) {
    EXPECT_TRUE(contains(msg, d)) << msg;
  }
}

TEST(ApplyYaml, BadWorkloadNamesChoices) {
  Config c;
  const std::string msg = input_error([&] { apply_yaml(c, "\nworkload: attention\n", "w.yaml"); });
  EXPECT_TRUE(contains(msg, "workload")) << msg;
  EXPECT_TRUE(contains(msg, "w.yaml:2")) << msg;
  EXPECT_TRUE(contains(msg, "gemm_rs")) << msg;
  EXPECT_TRUE(contains(msg, "attn")) << msg;
}

TEST(ApplyYaml, HeadsSweepAndRoundTrip) {
  Config c;
  apply_yaml(c, "workload: attn\nhidden: 256\nheads: [2, 8]\n", "h.yaml");
  const std::vector<Config> points = expand_sweep(c);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].shape.heads, 2);
  EXPECT_EQ(points[1].shape.heads, 8);
  Config point = points[1];
  point.sweep.clear();
  Config back;
  apply_yaml(back, point.to_yaml(), "back.yaml");
  EXPECT_EQ(back.shape.head_count(), 8);
  const std::string msg = input_error([&] { apply_yaml(c, "heads: many\n", "h.yaml"); });
  EXPECT_TRUE(contains(msg, "heads")) << msg;
  EXPECT_TRUE(contains(msg, "many")) << msg;
}

TEST(ApplyYaml, NonIntegerBatchNamesKey) {
  Config c;
  std::string msg = input_error([&] { apply_yaml(c, "batch: two\n", "b.yaml"); });
  EXPECT_TRUE(contains(msg, "batch")) << msg;
  EXPECT_TRUE(contains(msg, "two")) << msg;
  msg = input_error([&] { apply_yaml(c, "batch: 2.5\n", "b.yaml"); });
  EXPECT_TRUE(contains(msg, "batch")) << msg;
  // A list is a sweep; every value in it must still be an integer.
  msg = input_error([&] { apply_yaml(c, "batch: [1, two]\n", "b.yaml"); });
  EXPECT_TRUE(contains(msg, "batch")) << msg;
  EXPECT_TRUE(contains(msg, "two")) << msg;
}

TEST(Sweep, ListsMultiplyAndCasesAddIrregularPoints) {
  Config c;
  apply_yaml(c, "workload: [mlp, ag_gemm]\nbatch: 2\nseq: [128, 256, 512]\n", "s.yaml");
  std::vector<Config> points = expand_sweep(c);
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].workload, find_workload("mlp"));
  EXPECT_EQ(points[0].shape.seq, 128);
  EXPECT_EQ(points[1].shape.seq, 256);
  EXPECT_EQ(points[5].workload, find_workload("ag_gemm"));
  EXPECT_EQ(points[5].shape.seq, 512);
  for (const Config& p : points) EXPECT_EQ(p.shape.batch, 2);

  Config irregular;
  apply_yaml(irregular, "cases:\n  - {batch: 64, seq: 1024}\n  - {batch: 4, seq: 8192}\n",
             "c.yaml");
  points = expand_sweep(irregular);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].shape.batch, 4);
  EXPECT_EQ(points[1].shape.seq, 8192);

  Config plain;
  EXPECT_EQ(expand_sweep(plain).size(), 1u);
}

TEST(Sweep, BadListsAndCasesNameTheKey) {
  Config c;
  EXPECT_TRUE(contains(input_error([&] { apply_yaml(c, "iters: [1, 2]\n", "s.yaml"); }), "iters"));
  EXPECT_TRUE(contains(input_error([&] { apply_yaml(c, "seq: []\n", "s.yaml"); }), "seq"));
  EXPECT_TRUE(
      contains(input_error([&] { apply_yaml(c, "cases:\n  - {iters: 3}\n", "s.yaml"); }), "iters"));
  EXPECT_TRUE(
      contains(input_error([&] { apply_yaml(c, "dtype: [fp32, int4]\n", "s.yaml"); }), "int4"));
}

TEST(ApplyYaml, BadValuesOfOtherKeys) {
  Config c;
  EXPECT_TRUE(contains(input_error([&] { apply_yaml(c, "verify: maybe\n", "v.yaml"); }), "verify"));
  EXPECT_TRUE(
      contains(input_error([&] { apply_yaml(c, "link_gbps: fast\n", "l.yaml"); }), "link_gbps"));
  const std::string msg =
      input_error([&] { apply_yaml(c, "strategies: [baseline, nope]\n", "s.yaml"); });
  EXPECT_TRUE(contains(msg, "nope")) << msg;
  EXPECT_TRUE(contains(msg, "flash_direct")) << msg;
}

TEST(ApplyYaml, InvalidYamlIsInputError) {
  Config c;
  EXPECT_THROW(apply_yaml(c, "batch: [1, 2\n", "bad.yaml"), InputError);
  EXPECT_THROW(apply_yaml(c, "a: b: c\n", "bad.yaml"), InputError);
  EXPECT_THROW(apply_yaml(c, "- 1\n- 2\n", "list.yaml"), InputError);  // not a mapping
  EXPECT_THROW(apply_yaml(c, "just text\n", "scalar.yaml"), InputError);
}

TEST(ValidateConfig, DefaultsAreValid) {
  EXPECT_NO_THROW(validate_config(Config()));
}

TEST(ValidateConfig, RejectsBadValues) {
  Config c;
  c.iters = 0;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "iters"));
  c = Config();
  c.backend = "tpu";
  std::string msg = input_error([&] { validate_config(c); });
  EXPECT_TRUE(contains(msg, "backend")) << msg;
  EXPECT_TRUE(contains(msg, "tpu")) << msg;
  for (const char* b : {"auto", "cpu", "cuda"}) EXPECT_TRUE(contains(msg, b)) << msg;
  c = Config();
  c.transport = "tcp";
  msg = input_error([&] { validate_config(c); });
  EXPECT_TRUE(contains(msg, "transport")) << msg;
  EXPECT_TRUE(contains(msg, "nccl")) << msg;
  c = Config();
  c.warmup = -1;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "warmup"));
  c = Config();
  c.timeout = 0;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "timeout"));
  c = Config();
  c.blas_threads = 0;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "blas_threads"));
  c = Config();
  c.link.gbps = -1;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "link_gbps"));
  c = Config();
  c.strategies.clear();
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "strategies"));
  c = Config();
  c.strategies = {"flash:0"};
  EXPECT_THROW(validate_config(c), InputError);
  c = Config();
  c.shape.seq = 0;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "seq"));
}

TEST(ApplyYaml, CudaAndRoundOptions) {
  Config c;
  apply_yaml(c, "graphs: true\ncomm_sms: 16\nrounds: 3\ntransport: mpi\n", "cfg.yaml");
  EXPECT_TRUE(c.graphs);
  EXPECT_EQ(c.comm_sms, 16);
  EXPECT_EQ(c.rounds, 3);
  EXPECT_EQ(c.transport, "mpi");
  EXPECT_NO_THROW(validate_config(c));
  c.comm_sms = -2;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "comm_sms"));
  // auto (the default) is NCCL's CTA count; anything but auto or a count is named.
  EXPECT_EQ(Config().comm_sms, -1);
  apply_yaml(c, "comm_sms: auto\n", "cfg.yaml");
  EXPECT_EQ(c.comm_sms, -1);
  EXPECT_NO_THROW(validate_config(c));
  const std::string many = input_error([&] { apply_yaml(c, "comm_sms: many\n", "cfg.yaml"); });
  EXPECT_TRUE(contains(many, "comm_sms") && contains(many, "many") && contains(many, "auto"))
      << many;
  EXPECT_EQ(parse_comm_sms("0"), 0);
  EXPECT_TRUE(contains(input_error([&] { parse_comm_sms("-3"); }), "valid: auto"));
  c = Config();
  c.rounds = 0;
  EXPECT_TRUE(contains(input_error([&] { validate_config(c); }), "rounds"));
  Config bad;
  EXPECT_TRUE(
      contains(input_error([&] { apply_yaml(bad, "graphs: maybe\n", "cfg.yaml"); }), "graphs"));
}

TEST(SplitList, TrimsAndDropsEmpty) {
  EXPECT_EQ(split_list(" a, b ,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_list("").empty());
}

TEST(ConfigYaml, RoundTrips) {
  Config c;
  c.workload = find_workload("ag_gemm");
  c.strategies = {"flash:2", "slicing:4"};
  c.link.gbps = 1.5;
  c.seed = 9;
  Config back;
  apply_yaml(back, c.to_yaml(), "roundtrip");
  EXPECT_EQ(back.workload, c.workload);
  EXPECT_EQ(back.strategies, c.strategies);
  EXPECT_DOUBLE_EQ(back.link.gbps, 1.5);
  EXPECT_EQ(back.seed, 9u);
  EXPECT_EQ(back.ffn(), c.ffn());
  EXPECT_NO_THROW(validate_config(back));
}

TEST(ConfigKeys, EveryKeyIsReadWrittenAndListed) {
  Config c;
  const std::string yaml = c.to_yaml();
  const std::string unknown = input_error([&] { apply_yaml(c, "bogus: 1\n", "u.yaml"); });
  for (const ConfigKey& key : config_keys()) {
    EXPECT_EQ(find_config_key(key.name), &key);
    // A key left out at its default (omitted_at_default) is written once it is set.
    EXPECT_EQ(contains(yaml, std::string(key.name) + ":"), !key.omitted_at_default)
        << key.name << " in or not in:\n"
        << yaml;
    EXPECT_TRUE(contains(unknown, key.name)) << key.name << " not listed in: " << unknown;
  }
  EXPECT_TRUE(contains(unknown, "cases")) << unknown;
  EXPECT_EQ(find_config_key("cases"), nullptr);
  Config back;
  apply_yaml(back, yaml, "back.yaml");
  EXPECT_EQ(back.to_yaml(), yaml);
}

// Results files store to_yaml's text, and --resume compares it: its form must not drift.
TEST(ConfigKeys, ToYamlKeepsItsForm) {
  Config c;
  c.strategies = {"baseline", "flash:2"};
  c.link.gbps = 2.5;
  EXPECT_EQ(c.to_yaml(),
            "workload: mlp\nbatch: 4\nseq: 512\nhidden: 512\nffn: 2048\nheads: 4\n"
            "dtype: fp32\nstrategies: [baseline, flash:2]\niters: 20\nwarmup: 2\nrounds: 5\n"
            "backend: auto\ntransport: auto\nlink_gbps: 2.5\nlink_latency_us: 0\n"
            "verify: true\ntimeout: 300\nseed: 1\nblas_threads: 1\ngraphs: false\n"
            "auto_slices: false\ncomm_sms: auto\nmath: exact\noutput: \"\"");
  c.link.gbps = 0;
  c.link_ratio = 0.5;
  EXPECT_TRUE(contains(c.to_yaml(), "\nlink_ratio: 0.5\n")) << c.to_yaml();
}

TEST(ConfigKeys, HelpNamesTheChoices) {
  EXPECT_TRUE(contains(config_key_help(*find_config_key("strategies")), strategy_choices()));
  EXPECT_TRUE(contains(config_key_help(*find_config_key("workload")), "gemm_rs_grad"));
  EXPECT_TRUE(contains(config_key_help(*find_config_key("dtype")), "bf16"));
  EXPECT_TRUE(contains(config_key_help(*find_config_key("transport")), "nccl"));
  EXPECT_EQ(config_key_help(*find_config_key("seed")), find_config_key("seed")->help);
}

TEST(ConfigKeys, SettingsOverrideTheConfigAndReplaceItsLists) {
  Config c;
  apply_yaml(c, "batch: [2, 4]\nseq: [64, 128]\niters: 3\n", "s.yaml");
  ConfigValue batch, iters, verify;
  batch.text = "8";
  iters.text = "5";
  verify.flag = false;
  apply_settings(c, {{find_config_key("batch"), batch},
                     {find_config_key("iters"), iters},
                     {find_config_key("verify"), verify}});
  EXPECT_EQ(c.shape.batch, 8);
  EXPECT_EQ(c.sweep.count("batch"), 0u);
  EXPECT_EQ(c.sweep.count("seq"), 1u);
  EXPECT_EQ(c.iters, 5);
  EXPECT_FALSE(c.verify);
  batch.text = "0x10";
  EXPECT_TRUE(contains(input_error([&] {
                         apply_settings(c, {{find_config_key("batch"), batch}});
                       }),
                       "batch: '0x10' is not an integer"));
}

// The words of `text` written `like this`.
std::vector<std::string> backticked(const std::string& text) {
  std::vector<std::string> out;
  for (size_t open = text.find('`'); open != std::string::npos;) {
    const size_t close = text.find('`', open + 1);
    if (close == std::string::npos) break;
    out.push_back(text.substr(open + 1, close - open - 1));
    open = text.find('`', close + 1);
  }
  return out;
}

// README's "| key | option |" table names every config key with one of its options, and no
// other key.
TEST(ConfigKeys, ReadmeKeyTableMatches) {
  const char* root = std::getenv("FOB_SOURCE_DIR");
  if (!root || !*root) GTEST_SKIP() << "FOB_SOURCE_DIR is not set (ctest sets it)";
  std::ifstream in(std::filesystem::path(root) / "README.md");
  ASSERT_TRUE(in) << "cannot read README.md";
  std::map<std::string, std::string> options;  // key -> its row's option cell
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| key | option |") {
      in_table = true;
    } else if (in_table && line.rfind("|---", 0) != 0) {
      if (line.rfind('|', 0) != 0) break;
      const size_t cell = line.find('|', 1);
      for (const std::string& key : backticked(line.substr(0, cell))) {
        options[key] = line.substr(cell);
      }
    }
  }
  ASSERT_FALSE(options.empty()) << "README.md has no '| key | option |' table";
  std::set<std::string> names;
  for (const ConfigKey& key : config_keys()) {
    names.insert(key.name);
    const auto row = options.find(key.name);
    if (row == options.end()) {
      ADD_FAILURE() << "README's key table lacks '" << key.name << "'";
      continue;
    }
    bool named = false;
    for (std::string flag : split_list(key.flags)) {
      if (flag.front() == '!') flag.erase(0, 1);
      named = named || contains(row->second, "`" + flag + "`");
    }
    EXPECT_TRUE(named) << "README's row of '" << key.name << "' does not name " << key.flags;
  }
  for (const auto& [key, cell] : options) {
    EXPECT_EQ(names.count(key), 1u) << "README's key table names '" << key << "', not a key";
  }
}

// The configs shipped in bench_configs/ parse and validate. ctest sets FOB_SOURCE_DIR.
class ShippedConfig : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedConfig, ParsesAndValidates) {
  const char* root = std::getenv("FOB_SOURCE_DIR");
  if (!root || !*root) GTEST_SKIP() << "FOB_SOURCE_DIR is not set (ctest sets it)";
  const std::filesystem::path path =
      std::filesystem::path(root) / "bench_configs" / (GetParam() + ".yaml");
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  Config c;
  ASSERT_NO_THROW(apply_yaml(c, text.str(), path.string()));
  EXPECT_NO_THROW(validate_config(c));
  EXPECT_FALSE(c.strategies.empty());
}

INSTANTIATE_TEST_SUITE_P(BenchConfigs, ShippedConfig, ::testing::Values("demo", "smoke"));

}  // namespace
}  // namespace fob
