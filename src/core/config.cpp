#include "fob/config.h"

#include <cstdio>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "fob/config_keys.h"
#include "fob/moe_keys.h"
#include "fob/strategy.h"
#include "fob/workload.h"
#include "yaml_size.h"

namespace fob {

std::string quote_value(const std::string& value) {
  // Control characters are shown as \xNN: an escape sequence in a value must not reach the
  // terminal as one. Each counts as the 4 characters it takes.
  std::string shown;
  size_t i = 0;
  for (; i < value.size(); ++i) {
    const auto ch = static_cast<unsigned char>(value[i]);
    char text[8] = {static_cast<char>(ch), '\0'};
    if (ch < 0x20 || ch == 0x7f) std::snprintf(text, sizeof text, "\\x%02x", ch);
    if (shown.size() + std::strlen(text) > kMaxQuoted) break;
    shown += text;
  }
  if (i == value.size()) return "'" + shown + "'";
  // Cut before a UTF-8 continuation byte, not through a character (those bytes are shown as
  // they are, one character each).
  while (i > 0 && (static_cast<unsigned char>(value[i]) & 0xC0) == 0x80) {
    --i;
    shown.pop_back();
  }
  return "'" + shown + "...' (" + std::to_string(value.size()) + " bytes)";
}

namespace {

// The keys' names, every one or those a `cases` entry may set, as the messages list them.
std::string key_names(bool sweepable_only) {
  std::string text;
  for (const ConfigKey& k : config_keys()) {
    if (k.sweepable || !sweepable_only) text += (text.empty() ? "" : ", ") + std::string(k.name);
  }
  return text;
}

std::string where(const std::string& source, const YAML::Node& node) {
  return source + ":" + std::to_string(node.Mark().line + 1);
}

// A mapping's key as text: a key that is a list or a mapping (`? [a]: 1`) names nothing.
std::string key_text(const YAML::Node& key, const std::string& source) {
  if (!key.IsScalar()) {
    throw InputError(where(source, key) + ": a key must be a name (one of " + key_names(false) +
                     "), not a list or a mapping");
  }
  return key.Scalar();
}

template <typename T>
T scalar(const YAML::Node& node, const std::string& key, const std::string& source,
         const char* expected) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(where(source, node) + ": " + key + ": " +
                     (node.IsScalar() ? quote_value(node.Scalar()) : "'<not a scalar>'") +
                     " is not " + expected);
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
  throw InputError(key + ": " + quote_value(text) + " is not an integer from " +
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

// Sets one key from its YAML value: converted by the key's kind, then stored by its setter. An
// error names the value's line.
void apply_key(Config& c, const ConfigKey& key, const YAML::Node& v, const std::string& source) {
  ConfigValue value;
  switch (key.kind) {
    case ConfigKind::number:
      value.number = scalar<double>(v, key.name, source, key.expected);
      break;
    case ConfigKind::flag:
      value.flag = scalar<bool>(v, key.name, source, key.expected);
      break;
    case ConfigKind::integer:
      // The digits as written: the setter's parse_integer is the command line's rule too.
      if (!v.IsScalar()) {
        throw InputError(where(source, v) + ": " + key.name + ": '<not a scalar>' is not " +
                         key.expected);
      }
      value.text = v.Scalar();
      break;
    case ConfigKind::list:
      if (v.IsSequence()) {
        std::vector<std::string> items;
        for (const auto& item : v)
          items.push_back(scalar<std::string>(item, key.name, source, key.expected));
        value.text = join_list(items, ", ");
        break;
      }
      value.text =
          scalar<std::string>(v, key.name, source, (key.expected + std::string(" list")).c_str());
      break;
    case ConfigKind::text:
      value.text = scalar<std::string>(v, key.name, source, key.expected);
      break;
  }
  try {
    key.set(c, value);
  } catch (const InputError& e) {
    throw InputError(where(source, v) + ": " + e.what());
  }
}

// YAML forbids a key twice in one mapping, but yaml-cpp keeps both and lookups see the first:
// whichever the writer meant, one value would be ignored silently.
void refuse_duplicate_keys(const YAML::Node& map, const std::string& source) {
  std::map<std::string, int> first_line;
  for (const auto& entry : map) {
    const std::string key = key_text(entry.first, source);
    const int line = entry.first.Mark().line + 1;
    const auto [it, fresh] = first_line.emplace(key, line);
    if (!fresh) {
      throw InputError(source + ":" + std::to_string(line) + ": " + quote_value(key) +
                       " is given twice (first at line " + std::to_string(it->second) +
                       "); give each key once");
    }
  }
}

}  // namespace

void apply_yaml(Config& c, const std::string& yaml_text, const std::string& source) {
  check_yaml_size(yaml_text, source);
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
    const std::string key = key_text(entry.first, source);
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
          const std::string k = key_text(f.first, source);
          const ConfigKey* field = find_config_key(k);
          if (!field || !field->sweepable) {
            throw InputError(where(source, f.first) + ": cases: " + quote_value(k) +
                             " cannot vary per case; valid: " + key_names(true));
          }
          // Validates the value where it is written. A fresh config: no setter reads another
          // key, and a copy of `c` would copy every entry so far, once per entry.
          Config scratch;
          apply_key(scratch, *field, f.second, source);
          fields.emplace_back(k, f.second.Scalar());
        }
        c.cases.push_back(fields);
      }
      continue;
    }
    const ConfigKey* k = find_config_key(key);
    if (!k) {
      throw InputError(at + ": unknown key " + quote_value(key) +
                       "; valid keys: " + key_names(false) + ", cases");
    }
    if (v.IsSequence() && k->sweepable) {
      std::vector<std::string> values;
      for (const auto& item : v) {
        Config scratch;  // as for `cases`: no copy of the lists so far per item
        apply_key(scratch, *k, item, source);
        values.push_back(item.Scalar());
      }
      if (values.empty()) throw InputError(at + ": " + key + ": an empty list sweeps nothing");
      c.sweep[key] = values;
      apply_key(c, *k, v[0], source);  // the first value stands for the key elsewhere
      continue;
    }
    c.sweep.erase(key);
    apply_key(c, *k, v, source);
  }
}

namespace {

// a * b, or UINT64_MAX where the product does not fit: a count past every bound stays past it.
uint64_t times(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

// The strategies make_cases() gives each point at most: the reference modes and those asked for.
size_t strategies_per_point(const Config& config) {
  std::set<std::string> specs(config.strategies.begin(), config.strategies.end());
  for (const std::string& s : reference_strategies()) specs.insert(s);
  return specs.size();
}

// Each value of a list as a YAML node, parsed once for every point it is applied to.
std::vector<YAML::Node> loaded(const std::vector<std::string>& values) {
  std::vector<YAML::Node> nodes;
  nodes.reserve(values.size());
  for (const std::string& value : values) nodes.push_back(YAML::Load(value));
  return nodes;
}

}  // namespace

uint64_t sweep_case_count(const Config& config) {
  uint64_t count = strategies_per_point(config);
  for (const auto& [key, values] : config.sweep) count = times(count, values.size());
  if (!config.cases.empty()) count = times(count, config.cases.size());
  return count;
}

void check_sweep_size(const Config& config) {
  const uint64_t count = sweep_case_count(config);
  if (count <= kMaxSweepCases) return;
  std::string terms;
  for (const ConfigKey& key : config_keys()) {
    const auto it = config.sweep.find(key.name);
    if (it == config.sweep.end()) continue;
    terms += std::string(key.name) + " (" + std::to_string(it->second.size()) + " values) x ";
  }
  if (!config.cases.empty()) terms += "cases (" + std::to_string(config.cases.size()) + ") x ";
  terms +=
      "strategies (" + std::to_string(strategies_per_point(config)) + ", with the reference modes)";
  const std::string total =
      count == UINT64_MAX ? "more than " + std::to_string(UINT64_MAX) : std::to_string(count);
  throw InputError("sweep: " + terms + " = " + total + " cases, more than the " +
                   std::to_string(kMaxSweepCases) + " one run takes; split the sweep");
}

std::vector<Config> expand_sweep(const Config& config) {
  check_sweep_size(config);
  // The points carry no lists: copied into every point, they made a sweep cost the square of
  // its lists.
  Config base = config;
  base.sweep.clear();
  base.cases.clear();
  // Cartesian product of the swept keys, in a fixed key order so that case order is stable.
  std::vector<Config> points = {base};
  for (const ConfigKey& key : config_keys()) {
    auto it = config.sweep.find(key.name);
    if (it == config.sweep.end()) continue;
    const std::vector<YAML::Node> values = loaded(it->second);
    std::vector<Config> next;
    next.reserve(points.size() * values.size());
    for (const Config& p : points) {
      for (const YAML::Node& value : values) {
        Config c = p;
        apply_key(c, key, value, "sweep");
        next.push_back(std::move(c));
      }
    }
    points = std::move(next);
  }
  if (config.cases.empty()) return points;
  std::vector<Config> out;
  out.reserve(config.cases.size() * points.size());
  for (const auto& fields : config.cases) {
    std::vector<std::pair<const ConfigKey*, YAML::Node>> set;
    for (const auto& [key, value] : fields)
      set.emplace_back(find_config_key(key), YAML::Load(value));
    for (const Config& p : points) {
      Config c = p;
      for (const auto& [key, value] : set) apply_key(c, *key, value, "cases");
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string parse_gate(const std::string& text) {
  if (text == "all") return "";
  if (text.empty() || text == "interconnect") return text;
  throw InputError("gate: " + quote_value(text) +
                   " is not a gate; valid: all (compare judges every case's T, the default) or "
                   "interconnect (comm_only busbw decides, the overlapped steps' exposed "
                   "communication and compute cases are shown beside)");
}

std::string parse_math(const std::string& text) {
  if (text == "exact" || text == "fast") return text;
  throw InputError("math: " + quote_value(text) +
                   " is not a math mode; valid: exact (fp32 in fp32, fp32 split-K reductions), "
                   "fast (TF32 for fp32, reduced-precision split-K reductions)");
}

int parse_comm_sms(const std::string& text) {
  if (text == "auto") return -1;
  try {
    size_t used = 0;
    const int n = std::stoi(text, &used);
    if (used == text.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw InputError("comm_sms: " + quote_value(text) +
                   " is not a count of SMs; valid: auto, or an integer 0 or more");
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

// `experts`: the workload has experts, whose weights and routed tokens are tensors of the shape
// too.
void check_shape_size(const Shape& s, bool experts) {
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
  std::vector<std::pair<const char*, long double>> tensors = {
      {"batch x seq x hidden", tokens * s.hidden},
      {"batch x seq x ffn", tokens * ffn},
      {"hidden x ffn", s.hidden * ffn},
  };
  if (experts) {
    const long double expert_ffn = s.expert_ffn();
    tensors.emplace_back("experts x hidden x expert_ffn",
                         static_cast<long double>(s.experts()) * s.hidden * expert_ffn);
    tensors.emplace_back("batch x seq x top_k x expert_ffn", tokens * s.top_k() * expert_ffn);
  }
  for (const auto& [what, elements] : tensors) {
    if (elements > kMaxTensorElements) {
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
  if (c.iters > kMaxIters) {
    throw InputError("iters: " + std::to_string(c.iters) + " is more than " +
                     std::to_string(kMaxIters) + " timed iterations; valid: 1 to " +
                     std::to_string(kMaxIters) + " (-n/--iters)");
  }
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
  if (c.link_ratio != 0) {
    check_range("link_ratio", c.link_ratio, 0.01, 100, "T_comm / T_comp, or 0");
    if (c.link.gbps != 0) {
      throw InputError("link_ratio: " + std::to_string(c.link_ratio) +
                       " chooses link_gbps itself, but link_gbps is " +
                       std::to_string(c.link.gbps) + "; give one of them");
    }
    if (c.backend == "cuda") {
      throw InputError("link_ratio: the cuda backend has no emulated link; valid backends: cpu");
    }
  }
  // Names any text passes the setters of: checked here against the keys' choices.
  for (const char* name : {"backend", "transport"}) {
    const ConfigKey& key = *find_config_key(name);
    const std::string value = key.get(c).text;
    const std::vector<std::string> valid = split_list(key.choices());
    if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
      throw InputError(std::string(name) + ": " + quote_value(value) + " is not a " + name +
                       "; valid: " + key.choices());
    }
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
  // The MoE keys' own ranges first: the tensors below are sized by them.
  validate_moe_keys(c);
  check_shape_size(s, c.workload->has_experts);
}

std::string Config::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const ConfigKey& key : config_keys()) {
    const ConfigValue v = key.get(*this);
    if (key.omitted_at_default &&
        ((key.kind == ConfigKind::number && v.number == 0) ||
         (key.kind != ConfigKind::number && key.kind != ConfigKind::flag && v.text.empty()))) {
      continue;
    }
    out << YAML::Key << key.name << YAML::Value;
    switch (key.kind) {
      case ConfigKind::number:
        out << v.number;
        break;
      case ConfigKind::flag:
        out << v.flag;
        break;
      case ConfigKind::list:
        out << YAML::Flow << split_list(v.text);
        break;
      case ConfigKind::integer:  // digits, written plain as the integer would be
      case ConfigKind::text:
        out << v.text;
        break;
    }
  }
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
