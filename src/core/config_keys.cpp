// The table of config keys (fob/config_keys.h): one entry per key, in to_yaml's order.
#include "fob/config_keys.h"

#include <utility>

#include "fob/moe_keys.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {
namespace {

ConfigValue text(std::string s) {
  ConfigValue v;
  v.text = std::move(s);
  return v;
}

ConfigValue number(double x) {
  ConfigValue v;
  v.number = x;
  return v;
}

ConfigValue flag(bool b) {
  ConfigValue v;
  v.flag = b;
  return v;
}

// A count the config leaves at 0 for its default: empty then, so that to_yaml leaves the key
// out (omitted_at_default) and configs from before the key keep their text.
ConfigValue count(int64_t n) {
  return text(n == 0 ? "" : std::to_string(n));
}

std::string backend_choices() {
  return "auto, cpu, cuda";
}
std::string transport_choices() {
  return "auto, ce, mpi, nccl";
}

}  // namespace

namespace {

// The case: the layer, its shape and the strategies.
std::vector<ConfigKey> case_keys() {
  return {
      {"workload", "--workload", "the layer measured", ConfigKind::text, "a string", "as for run",
       true, workload_choices,
       [](Config& c, const ConfigValue& v) { c.workload = parse_workload(v.text); },
       [](const Config& c) { return text(to_string(c.workload)); }},
      {"batch", "--batch", "batch size b", ConfigKind::integer, "an integer", "as for run", true,
       nullptr,
       [](Config& c, const ConfigValue& v) {
         c.shape.batch = parse_integer<int64_t>("batch", v.text);
       },
       [](const Config& c) { return text(std::to_string(c.shape.batch)); }},
      {"seq", "--seq", "sequence length s (tokens M = b*s)", ConfigKind::integer, "an integer",
       "as for run", true, nullptr,
       [](Config& c, const ConfigValue& v) { c.shape.seq = parse_integer<int64_t>("seq", v.text); },
       [](const Config& c) { return text(std::to_string(c.shape.seq)); }},
      {"hidden", "--hidden", "hidden size D", ConfigKind::integer, "an integer", "as for run", true,
       nullptr,
       [](Config& c, const ConfigValue& v) {
         c.shape.hidden = parse_integer<int64_t>("hidden", v.text);
       },
       [](const Config& c) { return text(std::to_string(c.shape.hidden)); }},
      {"ffn", "--ffn", "FFN width F (default 4*D)", ConfigKind::integer, "an integer", "as for run",
       true, nullptr,
       [](Config& c, const ConfigValue& v) { c.shape.ffn = parse_integer<int64_t>("ffn", v.text); },
       [](const Config& c) { return text(std::to_string(c.ffn())); }},
      {"heads", "--heads", "attention heads, split across ranks (attn, ulysses; default D/128)",
       ConfigKind::integer, "an integer", "as for run", true, nullptr,
       [](Config& c, const ConfigValue& v) {
         c.shape.heads = parse_integer<int64_t>("heads", v.text);
       },
       [](const Config& c) { return text(std::to_string(c.shape.head_count())); }},
      {"dtype", "--dtype", "element type", ConfigKind::text, "a string", "as for run", true,
       dtype_choices, [](Config& c, const ConfigValue& v) { c.dtype = parse_dtype(v.text); },
       [](const Config& c) { return text(to_string(c.dtype)); }},
      {"strategies", "--strategies", "comma list", ConfigKind::list, "a strategy", "as for run",
       false, strategy_choices,
       [](Config& c, const ConfigValue& v) {
         c.strategies = split_list(v.text);
         for (const std::string& s : c.strategies) parse_strategy(s);
       },
       [](const Config& c) { return text(join_list(c.strategies, ", ")); }},
  };
}

// The MoE keys: each a field of the shape's MoeShape, left out of to_yaml while at its default.
template <int64_t MoeShape::*field>
ConfigKey moe_count_key(const char* name, const char* flags, const char* help) {
  return {
      name,
      flags,
      help,
      ConfigKind::integer,
      "an integer",
      "as for run",
      true,
      nullptr,
      [](Config& c, const ConfigValue& v) { c.shape.moe.*field = parse_moe_count(field, v.text); },
      [](const Config& c) { return count(c.shape.moe.*field); },
      true};
}

template <double MoeShape::*field>
ConfigKey moe_number_key(const char* name, const char* flags, const char* help) {
  return {name,
          flags,
          help,
          ConfigKind::number,
          "a number",
          "as for run",
          true,
          nullptr,
          [](Config& c, const ConfigValue& v) { c.shape.moe.*field = v.number; },
          [](const Config& c) { return number(c.shape.moe.*field); },
          true};
}

// The mixture-of-experts layer's shape (fob/moe_shape.h), for a workload with experts only.
std::vector<ConfigKey> moe_keys() {
  return {
      moe_count_key<&MoeShape::experts>("experts", "--experts",
                                        "moe: experts E over all ranks, 1 to 2^20 (default 8)"),
      moe_count_key<&MoeShape::top_k>(
          "top_k", "--top-k", "moe: experts k each token is routed to, 1 to experts (default 2)"),
      moe_count_key<&MoeShape::expert_ffn>(
          "expert_ffn", "--expert-ffn", "moe: each expert's FFN width (default the shape's ffn)"),
      moe_number_key<&MoeShape::skew>(
          "moe_skew", "--moe-skew",
          "moe: Zipf exponent of the experts' popularity, 0 to 4 (default 0: uniform routing)"),
      moe_number_key<&MoeShape::capacity_factor>(
          "capacity_factor", "--capacity-factor",
          "moe: an expert takes at most ceil(factor * tokens_per_rank * top_k / experts) tokens "
          "from each rank and drops the rest; 0.1 to 64, or 0 (default) for no limit"),
      moe_count_key<&MoeShape::seed>("moe_seed", "--moe-seed",
                                     "moe: the router's seed, apart from the inputs' (default 1)"),
  };
}

// How many iterations, and how they are spread.
std::vector<ConfigKey> iteration_keys() {
  return {
      {"iters", "-n,--iters", "timed iterations", ConfigKind::integer, "an integer", nullptr, false,
       nullptr,
       [](Config& c, const ConfigValue& v) { c.iters = parse_integer<int>("iters", v.text); },
       [](const Config& c) { return text(std::to_string(c.iters)); }},
      {"warmup", "-w,--warmup", "warm-up iterations", ConfigKind::integer, "an integer", nullptr,
       false, nullptr,
       [](Config& c, const ConfigValue& v) { c.warmup = parse_integer<int>("warmup", v.text); },
       [](const Config& c) { return text(std::to_string(c.warmup)); }},
      {"rounds", "--rounds",
       "spread the iterations over R rounds, every case running in each (1: one by one)",
       ConfigKind::integer, "an integer", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.rounds = parse_integer<int>("rounds", v.text); },
       [](const Config& c) { return text(std::to_string(c.rounds)); }},
  };
}

// Where and how it runs, and where its results go.
std::vector<ConfigKey> run_keys() {
  return {
      {"backend", "--backend", "where the layer computes", ConfigKind::text, "a string", nullptr,
       false, backend_choices, [](Config& c, const ConfigValue& v) { c.backend = v.text; },
       [](const Config& c) { return text(c.backend); }},
      {"transport", "--transport", "how the ranks communicate", ConfigKind::text, "a string",
       "the transfers' pricing: ce on the machine's copy_engines, else its links", false,
       transport_choices, [](Config& c, const ConfigValue& v) { c.transport = v.text; },
       [](const Config& c) { return text(c.transport); }},
      {"link_gbps", "--link-gbps", "emulated link bandwidth, Gbit/s", ConfigKind::number,
       "a number", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.link.gbps = v.number; },
       [](const Config& c) { return number(c.link.gbps); }},
      {"link_ratio", "--link-ratio",
       "choose the emulated bandwidth so that T_comm/T_comp is about this on the first shape "
       "(probed before the run; cpu backend)",
       ConfigKind::number, "a number", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.link_ratio = v.number; },
       [](const Config& c) { return number(c.link_ratio); }, true},
      {"link_latency_us", "--link-latency-us", "emulated link latency per transfer, microseconds",
       ConfigKind::number, "a number", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.link.latency_us = v.number; },
       [](const Config& c) { return number(c.link.latency_us); }},
      {"verify", "--verify,!--no-verify",
       "check every output bit for bit against the oracle (default on)", ConfigKind::flag,
       "true or false", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.verify = v.flag; },
       [](const Config& c) { return flag(c.verify); }},
      {"timeout", "--timeout", "seconds allowed per iteration", ConfigKind::number,
       "a number of seconds", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.timeout = v.number; },
       [](const Config& c) { return number(c.timeout); }},
      {"seed", "--seed", "input data seed", ConfigKind::integer, "an integer", nullptr, false,
       nullptr,
       [](Config& c, const ConfigValue& v) { c.seed = parse_integer<uint64_t>("seed", v.text); },
       [](const Config& c) { return text(std::to_string(c.seed)); }},
      {"blas_threads", "--blas-threads", "BLAS threads per rank", ConfigKind::integer, "an integer",
       nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) {
         c.blas_threads = parse_integer<int>("blas_threads", v.text);
       },
       [](const Config& c) { return text(std::to_string(c.blas_threads)); }},
      {"graphs", "--graphs", "cuda: capture one iteration per rank as a CUDA graph and replay it",
       ConfigKind::flag, "true or false", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.graphs = v.flag; },
       [](const Config& c) { return flag(c.graphs); }},
      {"auto_slices", "--auto-slices",
       "for slicing and flash, time a short sweep of counts per case and keep the best",
       ConfigKind::flag, "true or false", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.auto_slices = v.flag; },
       [](const Config& c) { return flag(c.auto_slices); }},
      {"comm_sms", "--comm-sms",
       "cuda: SMs the GEMMs of overlapping cases leave to NCCL (cublasSetSmCountTarget): auto "
       "(default) or a count, 0 for none",
       ConfigKind::text, "auto or an integer", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.comm_sms = parse_comm_sms(v.text); },
       [](const Config& c) { return text(c.comm_sms < 0 ? "auto" : std::to_string(c.comm_sms)); }},
      {"math", "--math",
       "cuda: exact (default: fp32 in fp32, split-K reductions in fp32) or fast (TF32 for fp32, "
       "reduced-precision split-K reductions), each verified within its own bound",
       ConfigKind::text, "exact or fast", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.math = parse_math(v.text); },
       [](const Config& c) { return text(c.math); }},
      {"gate", "--gate",
       "what `fobench compare --gate auto` judges this file by: all (every case's T) or "
       "interconnect (comm_only busbw and the overlapped steps' exposed communication)",
       ConfigKind::text, "all or interconnect", nullptr, false, nullptr,
       [](Config& c, const ConfigValue& v) { c.gate = parse_gate(v.text); },
       [](const Config& c) { return text(c.gate); }, true},
      {"output", "-o,--output", "results file (.h5)", ConfigKind::text, "a path",
       "results file (.h5), marked simulated", false, nullptr,
       [](Config& c, const ConfigValue& v) { c.output = v.text; },
       [](const Config& c) { return text(c.output); }},
  };
}

}  // namespace

// Names and ranges are checked by validate_config once every source has been applied; the
// setters check only what their parsing needs (a workload name, a strategy, an integer).
const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> all;
    for (auto part : {case_keys, moe_keys, iteration_keys, run_keys}) {
      for (ConfigKey& key : part()) all.push_back(std::move(key));
    }
    return all;
  }();
  return keys;
}

const ConfigKey* find_config_key(const std::string& name) {
  for (const ConfigKey& key : config_keys()) {
    if (name == key.name) return &key;
  }
  return nullptr;
}

std::string config_key_help(const ConfigKey& key) {
  if (!key.choices) return key.help;
  return std::string(key.help) + "; valid: " + key.choices();
}

void apply_settings(Config& c, const std::vector<ConfigSetting>& settings) {
  for (const ConfigSetting& s : settings) {
    if (s.key->sweepable) c.sweep.erase(s.key->name);
    s.key->set(c, s.value);
  }
}

}  // namespace fob
