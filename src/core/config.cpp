#include "fob/config.h"

#include <cstdio>

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <limits>
#include <map>
#include <sstream>

#include "fob/strategy.h"

namespace fob {
namespace {

const char* const kKeys[] = {
    "workload",        "batch",  "seq",     "hidden", "ffn",          "heads",     "dtype",
    "strategies",      "iters",  "warmup",  "rounds", "backend",      "transport", "link_gbps",
    "link_latency_us", "verify", "timeout", "seed",   "blas_threads", "graphs",    "comm_sms",
    "auto_slices",     "output", "cases"};

std::string key_list() {
  std::string text;
  for (const char* k : kKeys) text += (text.empty() ? "" : ", ") + std::string(k);
  return text;
}

std::string where(const std::string& source, const YAML::Node& node) {
  return source + ":" + std::to_string(node.Mark().line + 1);
}

template <typename T>
T scalar(const YAML::Node& node, const std::string& key, const std::string& source,
         const char* expected) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(where(source, node) + ": " + key + ": '" +
                     (node.IsScalar() ? node.Scalar() : std::string("<not a scalar>")) +
                     "' is not " + expected);
  }
}

// An integer key: parsed by parse_integer, the command line's rule, so that both refuse the
// same values with the same message.
template <typename T>
T integer(const YAML::Node& node, const std::string& key, const std::string& source) {
  if (!node.IsScalar()) {
    throw InputError(where(source, node) + ": " + key + ": '<not a scalar>' is not an integer");
  }
  try {
    return parse_integer<T>(key, node.Scalar());
  } catch (const InputError& e) {
    throw InputError(where(source, node) + ": " + e.what());
  }
}

}  // namespace

template <typename T>
T parse_integer(const std::string& key, const std::string& text) {
  T value{};
  const char* begin = text.data();
  const char* end = begin + text.size();
  // from_chars takes plain decimal only: no '+', no hex, no exponent, no sign on an unsigned type.
  const auto [ptr, error] = std::from_chars(begin, end, value);
  if (error == std::errc() && ptr == end && !text.empty()) return value;
  throw InputError(key + ": '" + text + "' is not an integer from " +
                   std::to_string(std::numeric_limits<T>::min()) + " to " +
                   std::to_string(std::numeric_limits<T>::max()) +
                   (error == std::errc::result_out_of_range ? " (out of range)" : ""));
}

template int parse_integer<int>(const std::string&, const std::string&);
template int64_t parse_integer<int64_t>(const std::string&, const std::string&);
template uint64_t parse_integer<uint64_t>(const std::string&, const std::string&);

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

namespace {

// The keys whose value may be a list: each list multiplies the cases (a sweep).
const char* const kSweepKeys[] = {"workload", "batch", "seq", "hidden", "ffn", "heads", "dtype"};

bool sweepable(const std::string& key) {
  for (const char* k : kSweepKeys) {
    if (key == k) return true;
  }
  return false;
}

// Sets one key from its YAML value; `at` locates the key for messages.
void apply_key(Config& c, const std::string& key, const YAML::Node& v, const std::string& source,
               const std::string& at) {
  if (key == "workload") {
    try {
      c.workload = parse_workload(scalar<std::string>(v, key, source, "a string"));
    } catch (const InputError& e) {
      throw InputError(at + ": " + e.what());
    }
  } else if (key == "batch") {
    c.shape.batch = integer<int64_t>(v, key, source);
  } else if (key == "seq") {
    c.shape.seq = integer<int64_t>(v, key, source);
  } else if (key == "hidden") {
    c.shape.hidden = integer<int64_t>(v, key, source);
  } else if (key == "ffn") {
    c.shape.ffn = integer<int64_t>(v, key, source);
  } else if (key == "heads") {
    c.shape.heads = integer<int64_t>(v, key, source);
  } else if (key == "dtype") {
    try {
      c.dtype = parse_dtype(scalar<std::string>(v, key, source, "a string"));
    } catch (const InputError& e) {
      throw InputError(at + ": " + e.what());
    }
  } else if (key == "strategies") {
    c.strategies.clear();
    if (v.IsSequence()) {
      for (const auto& s : v)
        c.strategies.push_back(scalar<std::string>(s, key, source, "a strategy"));
    } else {
      c.strategies = split_list(scalar<std::string>(v, key, source, "a strategy list"));
    }
    for (const std::string& s : c.strategies) {
      try {
        parse_strategy(s);
      } catch (const InputError& e) {
        throw InputError(where(source, v) + ": " + e.what());
      }
    }
  } else if (key == "iters") {
    c.iters = integer<int>(v, key, source);
  } else if (key == "rounds") {
    c.rounds = integer<int>(v, key, source);
  } else if (key == "warmup") {
    c.warmup = integer<int>(v, key, source);
  } else if (key == "backend") {
    c.backend = scalar<std::string>(v, key, source, "a string");
  } else if (key == "transport") {
    c.transport = scalar<std::string>(v, key, source, "a string");
  } else if (key == "link_gbps") {
    c.link.gbps = scalar<double>(v, key, source, "a number");
  } else if (key == "link_latency_us") {
    c.link.latency_us = scalar<double>(v, key, source, "a number");
  } else if (key == "verify") {
    c.verify = scalar<bool>(v, key, source, "true or false");
  } else if (key == "timeout") {
    c.timeout = scalar<double>(v, key, source, "a number of seconds");
  } else if (key == "seed") {
    c.seed = integer<uint64_t>(v, key, source);
  } else if (key == "blas_threads") {
    c.blas_threads = integer<int>(v, key, source);
  } else if (key == "auto_slices") {
    c.auto_slices = scalar<bool>(v, key, source, "true or false");
  } else if (key == "graphs") {
    c.graphs = scalar<bool>(v, key, source, "true or false");
  } else if (key == "comm_sms") {
    try {
      c.comm_sms = parse_comm_sms(scalar<std::string>(v, key, source, "auto or an integer"));
    } catch (const InputError& e) {
      throw InputError(where(source, v) + ": " + e.what());
    }
  } else if (key == "output") {
    c.output = scalar<std::string>(v, key, source, "a path");
  } else {
    throw InputError(at + ": unknown key '" + key + "'; valid keys: " + key_list());
  }
}

}  // namespace

namespace {

// YAML forbids a key twice in one mapping, but yaml-cpp keeps both and lookups see the first:
// whichever the writer meant, one value would be ignored silently.
void refuse_duplicate_keys(const YAML::Node& map, const std::string& source) {
  std::map<std::string, int> first_line;
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    const int line = entry.first.Mark().line + 1;
    const auto [it, fresh] = first_line.emplace(key, line);
    if (!fresh) {
      throw InputError(source + ":" + std::to_string(line) + ": '" + key +
                       "' is given twice (first at line " + std::to_string(it->second) +
                       "); give each key once");
    }
  }
}

}  // namespace

void apply_yaml(Config& c, const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) throw InputError(source + ": the config must be a mapping of keys to values");
  refuse_duplicate_keys(root, source);
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    const YAML::Node& v = entry.second;
    const std::string at = where(source, entry.first);
    if (key == "cases") {
      if (!v.IsSequence()) {
        throw InputError(at + ": cases: must be a list of mappings, e.g. [{batch: 4, seq: 2048}]");
      }
      c.cases.clear();
      for (const auto& item : v) {
        if (!item.IsMap())
          throw InputError(where(source, item) + ": cases: each entry is a mapping");
        refuse_duplicate_keys(item, source);
        std::vector<std::pair<std::string, std::string>> fields;
        for (const auto& f : item) {
          const std::string k = f.first.as<std::string>();
          if (!sweepable(k)) {
            throw InputError(where(source, f.first) + ": cases: '" + k +
                             "' cannot vary per case; valid: workload, batch, seq, hidden, ffn, "
                             "heads, dtype");
          }
          Config scratch = c;  // validates the value where it is written
          apply_key(scratch, k, f.second, source, where(source, f.first));
          fields.emplace_back(k, f.second.Scalar());
        }
        c.cases.push_back(fields);
      }
      continue;
    }
    if (v.IsSequence() && sweepable(key)) {
      std::vector<std::string> values;
      for (const auto& item : v) {
        Config scratch = c;
        apply_key(scratch, key, item, source, where(source, item));
        values.push_back(item.Scalar());
      }
      if (values.empty()) throw InputError(at + ": " + key + ": an empty list sweeps nothing");
      c.sweep[key] = values;
      apply_key(c, key, v[0], source, at);  // the first value stands for the key elsewhere
      continue;
    }
    c.sweep.erase(key);
    apply_key(c, key, v, source, at);
  }
}

std::vector<Config> expand_sweep(const Config& config) {
  // Cartesian product of the swept keys, in a fixed key order so that case order is stable.
  std::vector<Config> points = {config};
  for (const char* key : kSweepKeys) {
    auto it = config.sweep.find(key);
    if (it == config.sweep.end()) continue;
    std::vector<Config> next;
    for (const Config& p : points) {
      for (const std::string& value : it->second) {
        Config c = p;
        apply_key(c, key, YAML::Load(value), "sweep", key);
        next.push_back(c);
      }
    }
    points = next;
  }
  if (config.cases.empty()) return points;
  std::vector<Config> out;
  for (const auto& fields : config.cases) {
    for (const Config& p : points) {
      Config c = p;
      for (const auto& [key, value] : fields) apply_key(c, key, YAML::Load(value), "cases", key);
      out.push_back(c);
    }
  }
  return out;
}

int parse_comm_sms(const std::string& text) {
  if (text == "auto") return -1;
  try {
    size_t used = 0;
    const int n = std::stoi(text, &used);
    if (used == text.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw InputError("comm_sms: '" + text +
                   "' is not a count of SMs; valid: auto, or an integer 0 or more");
}

namespace {

// Beyond these the emulated delays and deadlines would overflow the clocks' durations or never
// end within a job; below kMinLinkGbps one 64 KiB transfer would take over a day.
constexpr double kMaxTimeoutSeconds = 1e6;
constexpr double kMinLinkGbps = 1e-5;
constexpr double kMaxLatencyUs = 1e8;

void check_range(const char* key, double value, double low, double high, const char* unit) {
  if (value >= low && value <= high) return;
  char text[160];
  std::snprintf(text, sizeof text, "%s: %g is out of range; valid: %g to %g %s", key, value, low,
                high, unit);
  throw InputError(text);
}

// cuBLAS and NCCL take 32-bit dimensions, and every byte count downstream is an int64_t: a
// dimension past 2^31 - 1, or a tensor past 2^50 elements (8 PiB in fp64, far beyond any
// machine), is refused here, so that no later product can wrap around.
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();
constexpr long double kMaxElements = 1125899906842624.0L;  // 2^50

void check_shape_size(const Shape& s) {
  for (auto [key, value] : {std::pair<const char*, int64_t>{"batch", s.batch},
                            {"seq", s.seq},
                            {"hidden", s.hidden},
                            {"ffn", s.ffn},
                            {"heads", s.heads}}) {
    if (value > kMaxDimension) {
      throw InputError(std::string(key) + ": " + std::to_string(value) +
                       " is too large; valid: 1 to " + std::to_string(kMaxDimension));
    }
  }
  const long double tokens = static_cast<long double>(s.batch) * s.seq;
  const long double ffn = s.ffn > 0 ? s.ffn : 4.0L * s.hidden;
  const std::pair<const char*, long double> tensors[] = {
      {"batch x seq x hidden", tokens * s.hidden},
      {"batch x seq x ffn", tokens * ffn},
      {"hidden x ffn", s.hidden * ffn},
  };
  for (const auto& [what, elements] : tensors) {
    if (elements > kMaxElements) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "shape: %s = %.3Lg elements is too large for any machine; at most 2^50", what,
                    elements);
      throw InputError(text);
    }
  }
}

}  // namespace

void validate_config(const Config& c) {
  if (c.iters < 1) throw InputError("iters: " + std::to_string(c.iters) + " must be at least 1");
  if (c.comm_sms < -1) {
    throw InputError("comm_sms: " + std::to_string(c.comm_sms) +
                     " is not a count of SMs; valid: auto, or an integer 0 or more");
  }
  if (c.rounds < 1) throw InputError("rounds: " + std::to_string(c.rounds) + " must be at least 1");
  if (c.warmup < 0) throw InputError("warmup: " + std::to_string(c.warmup) + " must be 0 or more");
  if (c.blas_threads < 1) {
    throw InputError("blas_threads: " + std::to_string(c.blas_threads) + " must be at least 1");
  }
  // Every double is checked against a closed range, which NaN fails too: a NaN would otherwise
  // turn emulation off silently, and a value too large or too small for the clocks would be
  // recorded as emulated while no delay is applied.
  check_range("timeout", c.timeout, 1e-3, kMaxTimeoutSeconds, "seconds");
  if (c.link.gbps != 0) check_range("link_gbps", c.link.gbps, kMinLinkGbps, 1e9, "Gbit/s, or 0");
  check_range("link_latency_us", c.link.latency_us, 0, kMaxLatencyUs, "microseconds");
  if (c.backend != "auto" && c.backend != "cpu" && c.backend != "cuda") {
    throw InputError("backend: '" + c.backend + "' is not a backend; valid: auto, cpu, cuda");
  }
  if (c.transport != "auto" && c.transport != "mpi" && c.transport != "nccl") {
    throw InputError("transport: '" + c.transport + "' is not a transport; valid: auto, mpi, nccl");
  }
  if (c.strategies.empty()) {
    throw InputError("strategies: empty; valid: " + strategy_choices());
  }
  for (const std::string& s : c.strategies) parse_strategy(s);
  const Shape& s = c.shape;
  for (auto [key, value] :
       {std::pair<const char*, int64_t>{"batch", s.batch}, {"seq", s.seq}, {"hidden", s.hidden}}) {
    if (value < 1) {
      throw InputError(std::string(key) + ": " + std::to_string(value) + " must be at least 1");
    }
  }
  if (s.ffn < 0) throw InputError("ffn: " + std::to_string(s.ffn) + " must be positive");
  if (s.heads < 0) throw InputError("heads: " + std::to_string(s.heads) + " must be at least 1");
  check_shape_size(s);
}

std::string Config::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "workload" << YAML::Value << to_string(workload);
  out << YAML::Key << "batch" << YAML::Value << shape.batch;
  out << YAML::Key << "seq" << YAML::Value << shape.seq;
  out << YAML::Key << "hidden" << YAML::Value << shape.hidden;
  out << YAML::Key << "ffn" << YAML::Value << ffn();
  out << YAML::Key << "heads" << YAML::Value << shape.head_count();
  out << YAML::Key << "dtype" << YAML::Value << to_string(dtype);
  out << YAML::Key << "strategies" << YAML::Value << YAML::Flow << strategies;
  out << YAML::Key << "iters" << YAML::Value << iters;
  out << YAML::Key << "warmup" << YAML::Value << warmup;
  out << YAML::Key << "rounds" << YAML::Value << rounds;
  out << YAML::Key << "backend" << YAML::Value << backend;
  out << YAML::Key << "transport" << YAML::Value << transport;
  out << YAML::Key << "link_gbps" << YAML::Value << link.gbps;
  out << YAML::Key << "link_latency_us" << YAML::Value << link.latency_us;
  out << YAML::Key << "verify" << YAML::Value << verify;
  out << YAML::Key << "timeout" << YAML::Value << timeout;
  out << YAML::Key << "seed" << YAML::Value << seed;
  out << YAML::Key << "blas_threads" << YAML::Value << blas_threads;
  out << YAML::Key << "graphs" << YAML::Value << graphs;
  out << YAML::Key << "auto_slices" << YAML::Value << auto_slices;
  if (comm_sms < 0) {
    out << YAML::Key << "comm_sms" << YAML::Value << "auto";
  } else {
    out << YAML::Key << "comm_sms" << YAML::Value << comm_sms;
  }
  out << YAML::Key << "output" << YAML::Value << output;
  for (const auto& [key, values] : sweep) {
    out << YAML::Key << "sweep_" + key << YAML::Value << YAML::Flow << values;
  }
  if (!cases.empty()) {
    out << YAML::Key << "cases" << YAML::Value << YAML::BeginSeq;
    for (const auto& fields : cases) {
      out << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : fields) out << YAML::Key << k << YAML::Value << v;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace fob
