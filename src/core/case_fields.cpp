#include "fob/case_fields.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "fob/workload.h"

namespace fob {

namespace {

CaseField field(const char* name, auto member, int axis_rank = -1) {
  CaseField f{name, member};
  f.axis_rank = axis_rank;
  return f;
}

// The MoE layer's fields: zeros outside a workload with experts.
CaseField moe_field(const char* name, auto member, int axis_rank) {
  CaseField f = field(name, member, axis_rank);
  f.scope = CaseFieldScope::experts;
  f.recorded_by_every = false;
  return f;
}

std::vector<CaseField> make_fields() {
  CaseField heads = field("heads", &CaseKey::heads, 5);
  heads.scope = CaseFieldScope::heads;
  CaseField strategy = field("strategy", &CaseKey::strategy);
  strategy.shape = false;
  // The paper sweeps seq and world; batch, hidden and ffn follow, then the layer's own.
  return {field("workload", &CaseKey::workload),
          strategy,
          field("batch", &CaseKey::batch, 2),
          field("seq", &CaseKey::seq, 0),
          field("hidden", &CaseKey::hidden, 3),
          field("ffn", &CaseKey::ffn, 4),
          heads,
          moe_field("experts", &CaseKey::experts, 6),
          moe_field("top_k", &CaseKey::top_k, 7),
          moe_field("expert_ffn", &CaseKey::expert_ffn, 10),
          moe_field("moe_skew", &CaseKey::moe_skew, 8),
          moe_field("capacity_factor", &CaseKey::capacity_factor, 9),
          moe_field("moe_seed", &CaseKey::moe_seed, 11),
          field("dtype", &CaseKey::dtype),
          field("world", &CaseKey::world, 1)};
}

}  // namespace

CaseFieldType CaseField::type() const {
  return std::visit(
      [](auto m) {
        using T = std::remove_cvref_t<decltype(CaseKey{}.*m)>;
        if constexpr (std::is_same_v<T, std::string>) return CaseFieldType::text;
        if constexpr (std::is_same_v<T, double>) return CaseFieldType::real;
        return CaseFieldType::integer;
      },
      member);
}

std::string CaseField::text(const CaseKey& k) const {
  return std::visit(
      [&](auto m) -> std::string {
        using T = std::remove_cvref_t<decltype(k.*m)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return k.*m;
        } else if constexpr (std::is_same_v<T, double>) {
          char text[32];
          std::snprintf(text, sizeof text, "%g", k.*m);
          return text;
        } else {
          return std::to_string(k.*m);
        }
      },
      member);
}

double CaseField::number(const CaseKey& k) const {
  return std::visit(
      [&](auto m) -> double {
        using T = std::remove_cvref_t<decltype(k.*m)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return 0;
        } else {
          return static_cast<double>(k.*m);
        }
      },
      member);
}

bool CaseField::applies(const CaseKey& k) const {
  switch (scope) {
    case CaseFieldScope::heads:
      return has_heads(k.workload);
    case CaseFieldScope::experts:
      return has_experts(k.workload);
    case CaseFieldScope::every:
      break;
  }
  return true;
}

const std::vector<CaseField>& case_fields() {
  static const std::vector<CaseField> fields = make_fields();
  return fields;
}

const CaseField* find_case_field(const std::string& name) {
  for (const CaseField& f : case_fields()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::vector<const CaseField*> case_axis_fields() {
  std::vector<const CaseField*> ranked;
  for (const CaseField& f : case_fields()) {
    if (f.axis_rank >= 0) ranked.push_back(&f);
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const CaseField* a, const CaseField* b) { return a->axis_rank < b->axis_rank; });
  return ranked;
}

}  // namespace fob
