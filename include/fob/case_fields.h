// The fields a case is told apart by, in one table: what `report --group-by` groups by, what
// `compare` lists beside each case, what picture titles describe a shape by and what the
// speedup picture may draw along (`--x`). Each consumer reads the table, so a field added to
// CaseKey and here reaches them all.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "fob/case_key.h"

namespace fob {

enum class CaseFieldType : uint8_t { text, integer, real };

// Which workloads a field shapes.
enum class CaseFieldScope : uint8_t {
  every,    // every workload's
  heads,    // workloads with heads (WorkloadDef::has_heads)
  experts,  // workloads with experts (WorkloadDef::has_experts)
};

struct CaseField {
  const char* name;  // the CaseKey member's, what --group-by and --x take
  std::variant<std::string CaseKey::*, int64_t CaseKey::*, int32_t CaseKey::*, double CaseKey::*>
      member;
  CaseFieldScope scope = CaseFieldScope::every;
  // Every workload records a value, shaped by it or not (heads: the shape's count), so tables
  // of keys list it for every case; otherwise the other workloads record zeros, which are
  // listed as nothing.
  bool recorded_by_every = true;
  // What the case computes, not how: every field but the strategy.
  bool shape = true;
  // The speedup picture's preference among the numeric fields that vary (lower first): a field
  // a user sweeps before one that follows from it. -1: never an axis.
  int axis_rank = -1;

  CaseFieldType type() const;
  // The value as the case key holds it: integers in decimal, reals as %g.
  std::string text(const CaseKey& k) const;
  // A numeric field's value; 0 for a text field.
  double number(const CaseKey& k) const;
  // Whether the field shapes k's workload: what descriptions of a shape name.
  bool applies(const CaseKey& k) const;
  // Whether k records a value of its own: what tables of keys list (text() or nothing).
  bool listed(const CaseKey& k) const { return recorded_by_every || applies(k); }
};

// In CaseKey's order.
const std::vector<CaseField>& case_fields();

// nullptr for a name no field has.
const CaseField* find_case_field(const std::string& name);

// The fields the speedup picture may draw along, by axis_rank.
std::vector<const CaseField*> case_axis_fields();

// "workload, strategy, batch, ...": the names of the fields `keep` accepts, in table order.
template <typename Keep>
std::string case_field_names(Keep keep) {
  std::string names;
  for (const CaseField& f : case_fields()) {
    if (keep(f)) names += (names.empty() ? "" : ", ") + std::string(f.name);
  }
  return names;
}

}  // namespace fob
