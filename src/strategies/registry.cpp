// The list of built-in strategies. A new strategy is one file plus one line here (or, for a
// strategy outside fobench's sources, one call to register_strategy).
#include <cstdlib>
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

std::string piece_name(int block, int sub, int subs) {
  std::string text = std::to_string(block);
  if (subs > 1) {
    text += '.';
    text += std::to_string(sub);
  }
  return text;
}

StrategySpec parse_strategy(const std::string& text) {
  std::string name = text;
  std::string param_text;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    name = text.substr(0, colon);
    param_text = text.substr(colon + 1);
  }
  const Strategy* s = find_strategy(text);
  if (!s) {
    throw InputError("strategies: " + quote_value(text) +
                     " is not a strategy; valid: " + strategy_choices());
  }
  StrategySpec spec{s, s->default_param, text};
  if (colon == std::string::npos) return spec;
  if (!s->param_name) {
    throw InputError("strategies: " + quote_value(text) + ": " + name +
                     " takes no parameter; valid: " + strategy_choices());
  }
  char* end = nullptr;
  long value = std::strtol(param_text.c_str(), &end, 10);
  if (param_text.empty() || *end != '\0' || value < 1 || value > 1 << 20) {
    throw InputError("strategies: " + quote_value(text) + ": " + s->param_name +
                     " must be a positive integer, as in " + name + ":4");
  }
  spec.param = static_cast<int>(value);
  return spec;
}

}  // namespace fob
