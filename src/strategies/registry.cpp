// The list of built-in strategies. A new strategy is one file plus one line here (or, for a
// strategy outside fobench's sources, one call to register_strategy).
#include <stdexcept>

#include "fob/config.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {

extern const Strategy kBaseline;
extern const Strategy kSlicing;
extern const Strategy kDecompose;
extern const Strategy kFlash;
extern const Strategy kFlashDirect;
extern const Strategy kFlashQs;
extern const Strategy kFlashStream;
extern const Strategy kComputeOnly;
extern const Strategy kCommOnly;

namespace {

std::vector<const Strategy*>& registry() {
  static std::vector<const Strategy*> list = {&kBaseline,    &kSlicing,     &kDecompose,
                                              &kFlash,       &kFlashDirect, &kFlashQs,
                                              &kFlashStream, &kComputeOnly, &kCommOnly};
  return list;
}

}  // namespace

const std::vector<const Strategy*>& all_strategies() {
  return registry();
}

void register_strategy(const Strategy& strategy) {
  if (find_strategy(strategy.name) != nullptr) {
    throw std::logic_error(std::string("register_strategy: '") + strategy.name +
                           "' is registered already");
  }
  registry().push_back(&strategy);
}

std::string strategy_choices() {
  std::string text;
  for (const Strategy* s : all_strategies()) {
    if (!text.empty()) text += ", ";
    text += s->name;
    if (s->param_name) text += std::string("[:") + s->param_name + "]";
  }
  return text;
}

const Strategy* find_strategy(const std::string& text) {
  const std::string name = text.substr(0, text.find(':'));
  for (const Strategy* s : all_strategies()) {
    if (name == s->name) return s;
  }
  return nullptr;
}

StrategyRole strategy_role(const std::string& text) {
  const Strategy* s = find_strategy(text);
  return s ? s->role : StrategyRole::overlapping;
}

const char* role_name(StrategyRole role) {
  for (const Strategy* s : all_strategies()) {
    if (s->role == role) return s->name;
  }
  return "";
}

std::vector<std::string> reference_strategies() {
  std::vector<std::string> out;
  for (const Strategy* s : all_strategies()) {
    if (s->is_reference()) out.push_back(s->name);
  }
  return out;
}

std::vector<std::string> default_strategies() {
  return {"baseline", "slicing:4", "decompose", "flash", "flash_direct"};
}

bool strategy_applies(const Strategy& strategy, Workload workload) {
  const std::pair<unsigned, bool> patterns[] = {
      {kAllGatherGemm, strategy.all_gather_gemm != nullptr},
      {kGemmReduceScatter, strategy.gemm_reduce_scatter != nullptr},
      {kAllGatherBlocks, strategy.all_gather_blocks != nullptr},
      {kGemmAllToAll, strategy.gemm_all_to_all != nullptr},
      {kAllToAllGemm, strategy.all_to_all_gemm != nullptr},
      {kMoeLayer, strategy.moe_layer != nullptr},
  };
  for (auto [bit, has] : patterns) {
    if ((workload->patterns & bit) && !has) return false;
  }
  return !(strategy.query_split || strategy.streams_attention) || workload->computed_h;
}

std::string applicable_workloads(const Strategy& strategy) {
  std::string text;
  for (Workload w : all_workloads()) {
    if (strategy_applies(strategy, w))
      text += (text.empty() ? "" : ", ") + std::string(to_string(w));
  }
  return text;
}

}  // namespace fob
