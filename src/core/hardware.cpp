#include "fob/hardware.h"

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "fob/nccl_log.h"
#include "fob/table.h"

namespace fob {

std::vector<HardwareFact> parse_facts(const std::vector<std::string>& lines) {
  std::vector<HardwareFact> out;
  for (const std::string& line : lines) {
    if (line.rfind("rank ", 0) != 0) continue;
    const size_t colon = line.find(": ");
    const size_t equals = line.find('=', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || equals == std::string::npos) continue;
    char* end = nullptr;
    const long rank = std::strtol(line.c_str() + 5, &end, 10);
    if (end != line.c_str() + colon || rank < 0) continue;
    out.push_back({static_cast<int>(rank), line.substr(colon + 2, equals - colon - 2),
                   line.substr(equals + 1)});
  }
  return out;
}

std::string throttle_doubt(const CaseResult& c) {
  std::string ranks;
  for (const HardwareFact& f : parse_facts(c.facts)) {
    if (f.key != "gpu_throttled" || f.value == "no" || f.value.empty()) continue;
    ranks += (ranks.empty() ? "" : ", ") + ("rank " + std::to_string(f.rank) + " " + f.value);
  }
  return ranks.empty() ? "" : "GPU throttled: " + ranks;
}

namespace {

std::vector<std::string> system_lines(const SystemInfo& s) {
  std::vector<std::string> lines;
  std::istringstream in(s.hardware);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Whether NVML reported NVLink from some rank's GPU to another GPU of its node.
bool nvml_reports_nvlink(const SystemInfo& s) {
  for (const HardwareFact& f : parse_facts(system_lines(s))) {
    if (f.key == "gpu_nvlink_to" && f.value.find(": yes") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string nvlink_verdict(const ResultFile& file) {
  std::set<std::string> paths;
  for (const CaseResult& c : file.cases) {
    std::map<int, std::string> path;
    std::map<int, int> local;
    for (const HardwareFact& f : parse_facts(c.facts)) {
      if (f.key == "nccl_ring_path") path[f.rank] = f.value;
      if (f.key == "nccl_local_ranks") local[f.rank] = std::atoi(f.value.c_str());
    }
    for (const auto& [rank, p] : path) {
      const auto shared = local.find(rank);
      const size_t slash = p.find('/');
      if (shared == local.end() || shared->second < 2 || slash == std::string::npos) continue;
      const std::string intra = p.substr(0, slash);
      if (!nvlink_path(intra)) paths.insert(intra);
    }
  }
  if (paths.empty()) return "";
  std::string types;
  for (const std::string& t : paths) types += (types.empty() ? "" : ", ") + t;
  std::string text =
      "GPUs sharing a node did not reach each other over NVLink: NCCL's ring ran over " + types +
      " (PCIe or a host bridge)";
  if (nvml_reports_nvlink(file.system)) {
    text +=
        ", though NVML reports NVLink between them: the ranks did not see each other's GPUs "
        "(give every rank all of its node's GPUs: NVIDIA/nccl#1066)";
  }
  return text;
}

TableDocument hardware_document(const ResultFile& file) {
  TableDocument doc;
  doc.title = "fobench report --hardware";
  doc.facts.push_back({"backend", Cell::of(file.system.backend)});
  doc.facts.push_back({"transport", Cell::of(file.system.transport)});
  Table table{"How the hardware ran each case",
              {Column{"case"}, Column{"strategy"}, Column{"rank", "", CellType::integer},
               Column{"key"}, Column{"value"}},
              {},
              {}};
  auto add = [&](const std::string& id, const std::string& strategy, const HardwareFact& f) {
    table.rows.push_back({Cell::of(id), Cell::of(strategy), Cell::of_int(f.rank), Cell::of(f.key),
                          Cell::of(f.value)});
  };
  for (const HardwareFact& f : parse_facts(system_lines(file.system))) add("-", "(run)", f);
  for (const CaseResult& c : file.cases) {
    for (const HardwareFact& f : parse_facts(c.facts)) add(c.id, c.strategy, f);
    if (const std::string t = throttle_doubt(c); !t.empty()) table.notes.push_back(c.id + ": " + t);
  }
  if (const std::string v = nvlink_verdict(file); !v.empty()) table.notes.push_back(v);
  if (table.rows.empty())
    table.notes.push_back("The file records no hardware facts (its backend said none).");
  doc.tables.push_back(std::move(table));
  return doc;
}

}  // namespace fob
