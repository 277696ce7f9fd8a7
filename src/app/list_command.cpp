// `fobench --list workloads|strategies`: the registries as they are in this build, for people
// and for the test suites and scripts that take their lists from it. Each entry is a line
// "name: summary" followed by indented "key: value" lines.
#include <iostream>

#include "commands.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

std::string pattern_names(unsigned patterns) {
  const std::pair<unsigned, const char*> names[] = {
      {kAllGatherGemm, "all-gather GEMM"},     {kGemmReduceScatter, "GEMM reduce-scatter"},
      {kAllGatherBlocks, "all-gather blocks"}, {kGemmAllToAll, "GEMM all-to-all"},
      {kAllToAllGemm, "all-to-all GEMM"},      {kMoeLayer, "MoE layer"},
  };
  std::string text;
  for (auto [bit, name] : names) {
    if (patterns & bit) text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

void list_workloads(std::ostream& out) {
  for (Workload w : all_workloads()) {
    out << w->name << ": " << w->summary << "\n";
    out << "  patterns: " << pattern_names(w->patterns) << "\n";
    if (w->computed_h) out << "  computed H: query split applies\n";
    if (w->has_heads) out << "  heads: yes\n";
    if (w->has_experts) out << "  experts: yes (experts, top_k, expert_ffn, moe_skew, ...)\n";
    if (w->no_loopback) out << "  loopback: no (" << w->no_loopback << ")\n";
    out << "  check shape: " << shape_options(w->check_shape) << "\n";
    if (w->small_shape) out << "  small shape: " << shape_options(*w->small_shape) << "\n";
    if (w->part_of) out << "  part of: " << w->part_of << "\n";
  }
}

const char* role_text(StrategyRole role) {
  switch (role) {
    case StrategyRole::compute_reference:
      return "reference: the GEMMs alone (T_comp)";
    case StrategyRole::comm_reference:
      return "reference: the transfers alone (T_comm)";
    case StrategyRole::serial_baseline:
      return "no overlap: what speedups are measured against";
    case StrategyRole::overlapping:
      return "overlapping";
  }
  return "?";
}

void list_strategies(std::ostream& out) {
  for (const Strategy* s : all_strategies()) {
    out << s->name;
    if (s->param_name) out << "[:" << s->param_name << "]";
    out << ": " << s->summary << "\n";
    out << "  role: " << role_text(s->role) << "\n";
    out << "  workloads: " << applicable_workloads(*s) << "\n";
    std::string tuned;
    for (int p : s->tuning()) tuned += (tuned.empty() ? "" : ", ") + std::to_string(p);
    if (!tuned.empty()) out << "  --auto-slices tries " << s->param_name << ": " << tuned << "\n";
  }
}

}  // namespace

int list_command(const std::string& what) {
  if (what == "workloads") {
    list_workloads(std::cout);
  } else {
    list_strategies(std::cout);
  }
  return 0;
}

}  // namespace fob
