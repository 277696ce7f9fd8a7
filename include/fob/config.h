// A run's settings: from a YAML config, overridden by the command line (docs/cli.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fob/link_emulation.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {

// One run takes at most this many cases: the points of its sweep (the product of its lists'
// lengths, times its `cases` entries) times its strategies, reference modes included. Each case
// costs a plan on every rank and a group in the results file; past this a sweep is split.
inline constexpr uint64_t kMaxSweepCases = 100000;
// A YAML config holds at most this many values (scalars, lists and mappings, keys included) and
// at most kMaxSweepCases items in one list: counted before yaml-cpp builds its nodes (about
// 500 bytes each, so some 200 MB a rank at the bound), so that an absurd list is refused, not
// loaded. The bound leaves room for a full-size list or `cases:` list.
inline constexpr int64_t kMaxConfigValues = 400000;
// The largest config file `run` reads: rank 0 sends it to every rank, in one int-counted message.
inline constexpr int64_t kMaxConfigBytes = int64_t{64} << 20;
// The most timed iterations a case takes: rank 0 keeps a start and an end per task per
// iteration of every rank, so --iters multiplies what the results hold.
inline constexpr int kMaxIters = 1000000;
// The most characters of a value an error message quotes (see quote_value()).
inline constexpr size_t kMaxQuoted = 80;

// Each setting is a key of config_keys() (config_keys.h), which reads and writes it.
struct Config {
  Workload workload = default_workload();
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
  // > 0: the CPU backend's emulated bandwidth is chosen before the run, by probing compute_only
  // and comm_only on the first shape, so that T_comm / T_comp is about this (link_ratio.cpp);
  // `link_probe` then says how it was chosen, for the results file.
  double link_ratio = 0;
  std::string link_probe;
  bool verify = true;
  double timeout = 300;
  uint64_t seed = 1;
  int blas_threads = 1;
  bool auto_slices = false;  // tune slicing:C and flash:m per case with a short sweep
  bool graphs = false;       // cuda: replay each iteration as a captured CUDA graph
  // cuda: SMs the GEMMs of overlapping cases leave to communication; -1 = auto (NCCL's CTA
  // count, see README), 0 = none.
  int comm_sms = -1;
  // What `fobench compare` judges these files by when asked for --gate auto: "" (every case's
  // T) or "interconnect" (what the link decides: comm_only busbw, the overlapped steps' exposed
  // communication). The interconnect configs say interconnect.
  std::string gate;
  // cuda: "exact" (fp32 GEMMs in fp32, split-K reductions in fp32) or "fast" (TF32 for fp32,
  // reduced-precision split-K reductions allowed, as PyTorch and Transformer Engine run).
  std::string math = "exact";
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
// when there are any. A config without lists is a single point. The points hold no lists (their
// `sweep` and `cases` are empty). Checks the count first (check_sweep_size).
std::vector<Config> expand_sweep(const Config& config);

// The cases the sweep makes, counted without making them: the product of the lists' lengths,
// the `cases` entries and the strategies with the reference modes (each strategy counted at
// every point, whether or not it applies there); UINT64_MAX where the product does not fit.
uint64_t sweep_case_count(const Config& config);
// InputError naming the swept keys, their lengths and the count when the sweep makes more than
// kMaxSweepCases cases.
void check_sweep_size(const Config& config);

// A value as error messages quote it: 'value', or past kMaxQuoted characters its start and its
// length, 'aaaa...' (52428800 bytes), so that a huge value does not flood the terminal; control
// characters are shown as \x1b, so that one does not reach the terminal as an escape.
std::string quote_value(const std::string& value);

// Checks values that do not depend on the world size (ranges, names).
// "auto" (-1) or a count of SMs >= 0; InputError naming the key and the valid values.
int parse_comm_sms(const std::string& text);
// "exact" or "fast"; InputError naming the key and the valid values.
std::string parse_math(const std::string& text);
// "" (all) or "interconnect"; InputError naming the key, the value and the choices.
std::string parse_gate(const std::string& text);

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
