// Machine files: parse_machine / load_machine read the YAML format documented in
// include/fob/machine.h, save_machine writes it back.
#include "fob/machine.h"
#include "fob/text_file.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <vector>

#include "core/yaml_size.h"

namespace fob {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMicro = 1e-6;

const char* const kTopKeys =
    "name, source, compute, gpu, links, topology, contention, launch_us, copy_engines";
const char* const kComputeKeys =
    "peak_tflops, memory_gbytes_per_s, gemm_efficiency, gemm_tiles, gemm_k_overhead, "
    "gemm_memory_efficiency";
const char* const kGpuKeys = "sms, comm_sms, max_split_k";
const char* const kLinkKeys = "name, latency_us, gbytes_per_s, achieved";
const char* const kAchievedKeys = "send_recv, all_gather, reduce_scatter, all_to_all";
const char* const kTopologyKeys = "ranks_per_node, intra_node, inter_node";
const char* const kContentionKeys = "gemm, transfer, comm_start_us";
const char* const kLaunchKeys = "compute, comm";
const char* const kCopyEngineKeys = "count, gbytes_per_s, copy_us";
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  std::string at(const YAML::Node& node) const {
    return file_ + ":" + std::to_string(node.Mark().line + 1);
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& what) const {
    throw InputError(at(node) + ": " + key + ": " + what);
  }

  static std::string text(const YAML::Node& node) {
    return node.IsScalar() ? node.Scalar() : std::string("<not a scalar>");
  }

  template <typename T>
  T scalar(const YAML::Node& node, const std::string& key, const char* expected) const {
    if (!node.IsScalar()) fail(node, key, "'" + text(node) + "' is not " + expected);
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(node, key, "'" + text(node) + "' is not " + expected);
    }
  }

  double number(const YAML::Node& node, const std::string& key) const {
    const auto v = scalar<double>(node, key, "a number");
    if (!std::isfinite(v)) fail(node, key, "'" + text(node) + "' is not a finite number");
    return v;
  }

  double positive(const YAML::Node& node, const std::string& key) const {
    const double v = number(node, key);
    if (!(v > 0)) fail(node, key, "'" + text(node) + "' must be > 0");
    return v;
  }

  double non_negative(const YAML::Node& node, const std::string& key) const {
    const double v = number(node, key);
    if (v < 0) fail(node, key, "'" + text(node) + "' must be >= 0");
    return v;
  }

  // Checks that `map` is a mapping whose keys are all in `valid` (comma-separated) and that
  // every key of `required` is present; `where` names the mapping in messages.
  void check_map(const YAML::Node& map, const std::string& where, const std::string& valid,
                 const std::vector<std::string>& required) const {
    if (!map.IsMap()) fail(map, where, "must be a mapping with keys " + valid);
    const std::string prefix = where.empty() ? "" : " in " + where;
    std::set<std::string> seen;  // yaml-cpp keeps a repeated key; YAML forbids it
    for (const auto& kv : map) {
      const std::string key = text(kv.first);
      if (!seen.insert(key).second) {
        throw InputError(at(kv.first) + ": '" + key + "' is given twice" + prefix +
                         "; give each key once");
      }
      bool known = false;
      std::stringstream list(valid);
      std::string item;
      while (std::getline(list, item, ',')) {
        const auto b = item.find_first_not_of(' ');
        if (item.substr(b) == key) known = true;
      }
      if (!known) {
        throw InputError(at(kv.first) + ": unknown key '" + key + "'" + prefix +
                         "; valid keys: " + valid);
      }
    }
    for (const std::string& r : required) {
      if (!map[r]) {
        throw InputError(at(map) + ": missing key '" + r + "'" + prefix + "; valid keys: " + valid);
      }
    }
  }

 private:
  std::string file_;
};

// The wave model's tiles of one dtype: [tile m, tile n, efficiency] rows.
void read_tiles(const Reader& r, const YAML::Node& node, const std::string& where,
                ComputeModel& c) {
  if (const YAML::Node k = node["gemm_k_overhead"]) {
    c.gemm_k_overhead = r.non_negative(k, where + ".gemm_k_overhead");
  }
  const YAML::Node table = node["gemm_tiles"];
  if (!table) return;
  const std::string key = where + ".gemm_tiles";
  if (node["gemm_efficiency"]) {
    r.fail(table, key, "give gemm_tiles (the wave model) or gemm_efficiency, not both");
  }
  if (!table.IsSequence() || table.size() == 0) {
    r.fail(table, key, "must be a list of [tile m, tile n, efficiency], e.g. [[128, 256, 0.8]]");
  }
  for (std::size_t i = 0; i < table.size(); ++i) {
    const YAML::Node row = table[i];
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!row.IsSequence() || row.size() != 3) {
      r.fail(row, at, "must be [tile m, tile n, efficiency], e.g. [128, 256, 0.8]");
    }
    GemmTile tile;
    tile.m = r.scalar<int64_t>(row[0], at + ".m", "an integer");
    tile.n = r.scalar<int64_t>(row[1], at + ".n", "an integer");
    if (tile.m < 1 || tile.n < 1) r.fail(row, at, "tile dimensions must be >= 1");
    tile.efficiency = r.number(row[2], at + ".efficiency");
    if (!(tile.efficiency > 0 && tile.efficiency <= 1)) {
      r.fail(row[2], at + ".efficiency",
             "'" + Reader::text(row[2]) + "' must be in (0, 1] (a fraction of an SM's peak)");
    }
    c.gemm_tiles.push_back(tile);
  }
}

ComputeModel read_compute(const Reader& r, const YAML::Node& node, const std::string& where) {
  r.check_map(node, where, kComputeKeys, {"peak_tflops", "memory_gbytes_per_s"});
  ComputeModel c;
  c.peak_flops = r.positive(node["peak_tflops"], where + ".peak_tflops") * kTera;
  c.memory_bytes_per_s =
      r.positive(node["memory_gbytes_per_s"], where + ".memory_gbytes_per_s") * kGiga;
  if (const YAML::Node table = node["gemm_efficiency"]) {
    const std::string key = where + ".gemm_efficiency";
    if (!table.IsSequence()) {
      r.fail(table, key, "must be a list of [m, n, k, efficiency], e.g. [[512, 512, 512, 0.3]]");
    }
    for (std::size_t i = 0; i < table.size(); ++i) {
      const YAML::Node row = table[i];
      const std::string at = key + "[" + std::to_string(i) + "]";
      if (!row.IsSequence() || row.size() != 4) {
        r.fail(row, at, "must be [m, n, k, efficiency], e.g. [512, 512, 512, 0.3]");
      }
      GemmPoint p;
      const char* const dims[] = {"m", "n", "k"};
      int64_t* const out[] = {&p.m, &p.n, &p.k};
      for (int d = 0; d < 3; ++d) {
        const auto v = r.scalar<int64_t>(row[d], at + "." + dims[d], "an integer");
        if (v < 1)
          r.fail(row[d], at + "." + dims[d], "'" + Reader::text(row[d]) + "' must be >= 1");
        *out[d] = v;
      }
      p.efficiency = r.number(row[3], at + ".efficiency");
      if (!(p.efficiency > 0 && p.efficiency <= 1)) {
        r.fail(row[3], at + ".efficiency",
               "'" + Reader::text(row[3]) + "' must be in (0, 1] (a fraction of peak)");
      }
      for (const GemmPoint& q : c.gemm_efficiency) {
        if (q.m == p.m && q.n == p.n && q.k == p.k) {
          r.fail(row, at,
                 "the shape " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
                     std::to_string(p.k) + " appears twice");
        }
      }
      c.gemm_efficiency.push_back(p);
    }
  }
  read_tiles(r, node, where, c);
  if (const YAML::Node e = node["gemm_memory_efficiency"]) {
    c.gemm_memory_efficiency = r.number(e, where + ".gemm_memory_efficiency");
    if (!(c.gemm_memory_efficiency > 0 && c.gemm_memory_efficiency <= 1)) {
      r.fail(e, where + ".gemm_memory_efficiency",
             "'" + Reader::text(e) + "' must be in (0, 1] (a fraction of memory_gbytes_per_s)");
    }
  }
  return c;
}

// The shortest text that reads back as exactly `v`.
std::string num(double v) {
  char buf[40];
  for (int digits = 9; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(ch));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

void read_compute_section(const Reader& r, const YAML::Node& compute, Machine& m) {
  if (!compute.IsMap() || compute.size() == 0) {
    r.fail(compute, "compute",
           std::string("must map dtypes to {peak_tflops, memory_gbytes_per_s, "
                       "gemm_efficiency}; valid dtypes: ") +
               dtype_choices());
  }
  std::set<std::string> dtypes_seen;
  for (const auto& kv : compute) {
    const std::string name = Reader::text(kv.first);
    if (!dtypes_seen.insert(name).second) {
      throw InputError(r.at(kv.first) + ": compute: '" + name + "' is given twice");
    }
    DType dtype{};
    try {
      dtype = parse_dtype(name);
    } catch (const InputError&) {
      throw InputError(r.at(kv.first) + ": compute: '" + name +
                       "' is not a dtype; valid: " + dtype_choices());
    }
    m.compute[dtype] = read_compute(r, kv.second, "compute." + name);
  }
}

// A link's measured rates: per op, [size, 1e9 bytes/s] rows with rising sizes.
void read_achieved(const Reader& r, const YAML::Node& node, const std::string& where,
                   LinkClass& c) {
  r.check_map(node, where, kAchievedKeys, {});
  for (int op = 0; op < kAchievedOps; ++op) {
    const YAML::Node table = node[achieved_name(op)];
    if (!table) continue;
    const std::string key = where + "." + achieved_name(op);
    if (!table.IsSequence() || table.size() == 0) {
      r.fail(table, key, "must be a list of [size in bytes, gbytes_per_s], e.g. [[1048576, 20]]");
    }
    std::vector<RatePoint>& points = c.achieved[static_cast<size_t>(op)];
    for (std::size_t i = 0; i < table.size(); ++i) {
      const YAML::Node row = table[i];
      const std::string at = key + "[" + std::to_string(i) + "]";
      if (!row.IsSequence() || row.size() != 2) {
        r.fail(row, at, "must be [size in bytes, gbytes_per_s], e.g. [1048576, 20]");
      }
      RatePoint p;
      p.bytes = r.scalar<int64_t>(row[0], at + ".size", "an integer");
      if (p.bytes < 1 || (!points.empty() && p.bytes <= points.back().bytes)) {
        r.fail(row[0], at + ".size",
               "'" + Reader::text(row[0]) +
                   "' must be >= 1 and above the "
                   "size of the row before it");
      }
      p.bytes_per_s = r.positive(row[1], at + ".gbytes_per_s") * kGiga;
      points.push_back(p);
    }
  }
}

// The link classes; returns their names as a list for messages.
std::string read_links(const Reader& r, const YAML::Node& links, Machine& m) {
  if (!links.IsSequence() || links.size() == 0) {
    r.fail(links, "links", "must be a list of {name, latency_us, gbytes_per_s}");
  }
  std::string link_names;
  for (std::size_t i = 0; i < links.size(); ++i) {
    const YAML::Node l = links[i];
    const std::string at = "links[" + std::to_string(i) + "]";
    r.check_map(l, at, kLinkKeys, {"name", "latency_us", "gbytes_per_s"});
    LinkClass c;
    c.name = r.scalar<std::string>(l["name"], at + ".name", "a string");
    if (c.name.empty()) r.fail(l["name"], at + ".name", "must not be empty");
    for (const LinkClass& other : m.links) {
      if (other.name == c.name) r.fail(l["name"], at + ".name", "'" + c.name + "' appears twice");
    }
    c.latency_s = r.non_negative(l["latency_us"], at + ".latency_us") * kMicro;
    c.bytes_per_s = r.positive(l["gbytes_per_s"], at + ".gbytes_per_s") * kGiga;
    if (l["achieved"]) read_achieved(r, l["achieved"], at + ".achieved", c);
    m.links.push_back(c);
    link_names += (link_names.empty() ? "" : ", ") + c.name;
  }
  return link_names;
}

void read_topology(const Reader& r, const YAML::Node& topo, const std::string& link_names,
                   Machine& m) {
  r.check_map(topo, "topology", kTopologyKeys, {"ranks_per_node", "intra_node", "inter_node"});
  m.ranks_per_node = r.scalar<int>(topo["ranks_per_node"], "topology.ranks_per_node", "an integer");
  if (m.ranks_per_node < 1) {
    r.fail(topo["ranks_per_node"], "topology.ranks_per_node",
           "'" + Reader::text(topo["ranks_per_node"]) + "' must be >= 1");
  }
  for (const char* key : {"intra_node", "inter_node"}) {
    const std::string full = std::string("topology.") + key;
    const auto name = r.scalar<std::string>(topo[key], full, "a link class name");
    bool found = false;
    for (const LinkClass& c : m.links) found = found || c.name == name;
    if (!found) r.fail(topo[key], full, "'" + name + "' is not a link class; valid: " + link_names);
    (std::string(key) == "intra_node" ? m.intra_node : m.inter_node) = name;
  }
}

// The optional contention and launch sections. A bare number under `contention` is the GEMM
// factor, as in files written before the other two existed.
void read_interference(const Reader& r, const YAML::Node& root, Machine& m) {
  if (const YAML::Node c = root["contention"]) {
    auto factor = [&](const YAML::Node& node, const std::string& key) {
      const double v = r.number(node, key);
      if (!(v >= 1))
        r.fail(node, key, "'" + Reader::text(node) + "' must be >= 1 (1: no slowdown)");
      return v;
    };
    if (c.IsScalar()) {
      m.contention = factor(c, "contention");
    } else {
      r.check_map(c, "contention", kContentionKeys, {});
      if (c["gemm"]) m.contention = factor(c["gemm"], "contention.gemm");
      if (c["transfer"]) m.transfer_contention = factor(c["transfer"], "contention.transfer");
      if (c["comm_start_us"]) {
        m.comm_start_delay_s =
            r.non_negative(c["comm_start_us"], "contention.comm_start_us") * kMicro;
      }
    }
  }
  if (const YAML::Node l = root["launch_us"]) {
    r.check_map(l, "launch_us", kLaunchKeys, {});
    if (l["compute"])
      m.launch_compute_s = r.non_negative(l["compute"], "launch_us.compute") * kMicro;
    if (l["comm"]) m.launch_comm_s = r.non_negative(l["comm"], "launch_us.comm") * kMicro;
  }
}

// The optional gpu section, which a dtype's gemm_tiles needs.
void read_gpu(const Reader& r, const YAML::Node& root, Machine& m) {
  const YAML::Node g = root["gpu"];
  if (g) {
    r.check_map(g, "gpu", kGpuKeys, {"sms"});
    m.gpu.sms = r.scalar<int>(g["sms"], "gpu.sms", "an integer");
    if (m.gpu.sms < 1) r.fail(g["sms"], "gpu.sms", "'" + Reader::text(g["sms"]) + "' must be >= 1");
    if (g["comm_sms"]) {
      m.gpu.comm_sms = r.scalar<int>(g["comm_sms"], "gpu.comm_sms", "an integer");
      if (m.gpu.comm_sms < 0 || m.gpu.comm_sms >= m.gpu.sms) {
        r.fail(g["comm_sms"], "gpu.comm_sms",
               "'" + Reader::text(g["comm_sms"]) + "' must be in [0, sms - 1]");
      }
    }
    if (g["max_split_k"]) {
      m.gpu.max_split_k = r.scalar<int>(g["max_split_k"], "gpu.max_split_k", "an integer");
      const int s = m.gpu.max_split_k;
      if (s < 1 || s > 64 || (s & (s - 1)) != 0) {
        r.fail(g["max_split_k"], "gpu.max_split_k",
               "'" + Reader::text(g["max_split_k"]) + "' must be a power of 2 from 1 to 64");
      }
    }
  }
  for (const auto& [dtype, c] : m.compute) {
    if (!c.gemm_tiles.empty() && !g) {
      r.fail(root["compute"], std::string("compute.") + to_string(dtype) + ".gemm_tiles",
             "the wave model needs a gpu section, e.g. gpu: {sms: 132, comm_sms: 16}");
    }
  }
}

// The optional copy_engines section: what --transport ce is priced with.
void read_copy_engines(const Reader& r, const YAML::Node& root, Machine& m) {
  const YAML::Node ce = root["copy_engines"];
  if (!ce) return;
  r.check_map(ce, "copy_engines", kCopyEngineKeys, {"count", "gbytes_per_s", "copy_us"});
  m.copy_engines.count = r.scalar<int>(ce["count"], "copy_engines.count", "an integer");
  if (m.copy_engines.count < 1) {
    r.fail(ce["count"], "copy_engines.count",
           "'" + Reader::text(ce["count"]) + "' must be >= 1 (copy engines per GPU)");
  }
  m.copy_engines.bytes_per_s = r.positive(ce["gbytes_per_s"], "copy_engines.gbytes_per_s") * kGiga;
  m.copy_engines.copy_s = r.non_negative(ce["copy_us"], "copy_engines.copy_us") * kMicro;
}

}  // namespace

Machine parse_machine(const std::string& yaml_text, const std::string& source) {
  check_yaml_size(yaml_text, source, "machine file");
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap())
    throw InputError(source + ": a machine file must be a mapping of keys to values");
  const Reader r(source);
  r.check_map(root, "", kTopKeys, {"name", "source", "compute", "links", "topology"});

  Machine m;
  m.name = r.scalar<std::string>(root["name"], "name", "a string");
  if (m.name.empty()) r.fail(root["name"], "name", "must not be empty");
  m.source = r.scalar<std::string>(root["source"], "source", "a string");
  read_compute_section(r, root["compute"], m);
  read_gpu(r, root, m);
  const std::string link_names = read_links(r, root["links"], m);
  read_topology(r, root["topology"], link_names, m);
  read_interference(r, root, m);
  read_copy_engines(r, root, m);
  return m;
}

Machine load_machine(const std::string& path) {
  return parse_machine(read_regular_file(path, "machine file"), path);
}

static void save_link(std::ostream& out, const LinkClass& l) {
  out << "  - {name: " << quoted(l.name) << ", latency_us: " << num(l.latency_s / kMicro)
      << ", gbytes_per_s: " << num(l.bytes_per_s / kGiga);
  bool any = false;
  for (int op = 0; op < kAchievedOps; ++op) {
    const std::vector<RatePoint>& points = l.achieved[static_cast<size_t>(op)];
    if (points.empty()) continue;
    out << (any ? ", " : ", achieved: {") << achieved_name(op) << ": [";
    for (size_t i = 0; i < points.size(); ++i) {
      out << (i ? ", " : "") << "[" << points[i].bytes << ", " << num(points[i].bytes_per_s / kGiga)
          << "]";
    }
    out << "]";
    any = true;
  }
  out << (any ? "}}\n" : "}\n");
}

void save_machine(std::ostream& out, const Machine& machine) {
  out << "# fobench machine file (see include/fob/machine.h and "
         "bench_configs/machines/README.md).\n"
      << "# Units: peak_tflops in 1e12 flop/s, memory_gbytes_per_s and gbytes_per_s in 1e9 "
         "bytes/s\n"
      << "# (links: per rank and direction), latency_us in microseconds. gemm_efficiency rows are\n"
      << "# [m, n, k, achieved fraction of peak], interpolated in log space between rows.\n";
  out << "name: " << quoted(machine.name) << "\n";
  out << "source: " << quoted(machine.source) << "\n";
  out << "compute:\n";
  for (const auto& [dtype, c] : machine.compute) {
    out << "  " << to_string(dtype) << ":\n";
    out << "    peak_tflops: " << num(c.peak_flops / kTera) << "\n";
    out << "    memory_gbytes_per_s: " << num(c.memory_bytes_per_s / kGiga) << "\n";
    if (!c.gemm_efficiency.empty()) {
      out << "    gemm_efficiency:  # [m, n, k, fraction of peak]\n";
      for (const GemmPoint& p : c.gemm_efficiency) {
        out << "      - [" << p.m << ", " << p.n << ", " << p.k << ", " << num(p.efficiency)
            << "]\n";
      }
    }
    if (c.gemm_memory_efficiency != 1) {
      out << "    gemm_memory_efficiency: " << num(c.gemm_memory_efficiency) << "\n";
    }
    if (!c.gemm_tiles.empty()) {
      out << "    gemm_tiles:  # [tile m, tile n, fraction of an SM's peak]\n";
      for (const GemmTile& t : c.gemm_tiles) {
        out << "      - [" << t.m << ", " << t.n << ", " << num(t.efficiency) << "]\n";
      }
      out << "    gemm_k_overhead: " << num(c.gemm_k_overhead) << "\n";
    }
  }
  if (machine.gpu.sms > 0) {
    out << "gpu: {sms: " << machine.gpu.sms << ", comm_sms: " << machine.gpu.comm_sms
        << ", max_split_k: " << machine.gpu.max_split_k << "}\n";
  }
  out << "links:\n";
  for (const LinkClass& l : machine.links) save_link(out, l);
  out << "topology: {ranks_per_node: " << machine.ranks_per_node
      << ", intra_node: " << quoted(machine.intra_node)
      << ", inter_node: " << quoted(machine.inter_node) << "}\n";
  out << "contention: {gemm: " << num(machine.contention)
      << ", transfer: " << num(machine.transfer_contention)
      << ", comm_start_us: " << num(machine.comm_start_delay_s / kMicro) << "}\n";
  out << "launch_us: {compute: " << num(machine.launch_compute_s / kMicro)
      << ", comm: " << num(machine.launch_comm_s / kMicro) << "}\n";
  if (machine.copy_engines.count > 0) {
    const CopyEngineModel& ce = machine.copy_engines;
    out << "copy_engines: {count: " << ce.count << ", gbytes_per_s: " << num(ce.bytes_per_s / kGiga)
        << ", copy_us: " << num(ce.copy_s / kMicro) << "}\n";
  }
}

}  // namespace fob
