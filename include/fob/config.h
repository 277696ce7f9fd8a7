// A run's settings: from a YAML config, overridden by the command line (DESIGN.md section 4).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fob/backend.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {

// Each setting is a key of config_keys() (config_keys.h), which reads and writes it.
struct Config {
  Workload workload = Workload::mlp;
  Shape shape{4, 512, 512, 0};  // ffn 0 means 4 * hidden
  DType dtype = DType::fp32;
  std::vector<std::string> strategies = default_strategies();
  int iters = 20;
  int warmup = 2;
  // Timed iterations are spread over this many rounds, every case running in each, so that a
  // slow drift of a shared machine does not fall on one strategy only.
  int rounds = 5;
  std::string backend = "auto";
  std::string transport = "auto";
  LinkEmulation link;
  bool verify = true;
  double timeout = 300;
  uint64_t seed = 1;
  int blas_threads = 1;
  bool auto_slices = false;  // tune slicing:C and flash:m per case with a short sweep
  bool graphs = false;       // cuda: replay each iteration as a captured CUDA graph
  // cuda: SMs the GEMMs of overlapping cases leave to communication; -1 = auto (NCCL's CTA
  // count, see README), 0 = none.
  int comm_sms = -1;
  std::string output;  // empty: results/fobench-<time>.h5

  // A sweep: keys given as lists (workload, batch, seq, hidden, ffn, dtype), each value as
  // written; the scalar fields above hold the first value. `cases` lists irregular points, each
  // a set of key/value overrides.
  std::map<std::string, std::vector<std::string>> sweep;
  std::vector<std::vector<std::pair<std::string, std::string>>> cases;

  int64_t ffn() const { return shape.ffn > 0 ? shape.ffn : 4 * shape.hidden; }
  std::string to_yaml() const;  // the effective settings, as stored in the results file
};

// Applies the keys of a YAML document to `config`. Unknown keys and bad values throw
// InputError naming the key, its line in `source` and the valid choices.
void apply_yaml(Config& config, const std::string& yaml_text, const std::string& source);

// Every point of the sweep: the Cartesian product of the listed keys, times the `cases` entries
// when there are any. A config without lists is a single point.
std::vector<Config> expand_sweep(const Config& config);

// Checks values that do not depend on the world size (ranges, names).
// "auto" (-1) or a count of SMs >= 0; InputError naming the key and the valid values.
int parse_comm_sms(const std::string& text);

// An integer option's value, one rule for the command line and YAML: decimal digits with a sign
// only where T has one, within T's range; otherwise InputError naming the key, the value and
// the range. Instantiated for int, int64_t and uint64_t.
template <typename T>
T parse_integer(const std::string& key, const std::string& text);

void validate_config(const Config& config);

// Splits a comma-separated list into its items, trimmed, empty ones dropped.
std::vector<std::string> split_list(const std::string& text);
// The items with `sep` between them: split_list's inverse for ", ".
std::string join_list(const std::vector<std::string>& items, const char* sep);

}  // namespace fob
