// What a case is. A config names cases as CaseSpecs, a results file as CaseResults; both reduce
// to this key, and resume, compare, the metrics' reference lookups and the regeneration of a
// recorded case's plans all match cases by it and by nothing else (case ids are per-file
// numbering).
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "fob/moe_shape.h"

namespace fob {

struct CaseSpec;
struct Plan;
struct Strategy;
enum class StrategyRole : uint8_t;  // strategy.h

struct CaseKey {
  std::string workload;
  std::string strategy;  // the spec as written (a strategy name, with :P where it takes one)
  int64_t batch = 0, seq = 0, hidden = 0, ffn = 0;
  int64_t heads = 0;  // attention heads (every workload records the shape's count)
  // The MoE layer's shape (moe_shape.h), resolved: a workload with experts records the values it
  // ran with (defaults filled in, so that spelling a default or leaving it out is one case),
  // every other workload zeros.
  int64_t experts = 0, top_k = 0, expert_ffn = 0;
  double moe_skew = 0, capacity_factor = 0;
  int64_t moe_seed = 0;
  std::string dtype;
  int32_t world = 0;

  static CaseKey of(const CaseSpec& spec);
  static CaseKey of(const Plan& plan);
  const CaseKey& key() const { return *this; }
  // The strategy table's entry the case names, nullptr for one this version does not know (a
  // file from another version), and its role (overlapping for an unknown one): what metrics,
  // reports and pictures ask, never the name.
  const Strategy* definition() const;
  StrategyRole role() const;
  bool has_role(StrategyRole r) const { return role() == r; }
  // The strategy's name without its parameter ("flash" of "flash:4"), known to this version or
  // not.
  std::string strategy_name() const { return strategy.substr(0, strategy.find(':')); }
  // A reference mode (compute_only, comm_only): a bound the strategies are measured against.
  bool is_reference() const;
  // The same shape measured by another strategy: where a case finds its references.
  CaseKey with_strategy(const std::string& other) const;
  // The case this key names, to build its plans again. InputError when a name is not one this
  // version knows (a file from another version).
  CaseSpec spec() const;
  // "mlp flash b2 s72 h33 f96 heads0 fp32 N=2"; a case with experts appends its MoE fields:
  // "... fp32 N=2 E8 k2 F512 skew0 cap1.25 seed1".
  std::string text() const;
  MoeShape moe() const { return {experts, top_k, expert_ffn, moe_skew, capacity_factor, moe_seed}; }

  auto operator<=>(const CaseKey& other) const = default;
  bool operator==(const CaseKey& other) const = default;
};

}  // namespace fob
