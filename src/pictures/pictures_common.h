// What the pictures say the same way: a shape's fields and how a shape is described.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/case_fields.h"
#include "fob/metrics.h"
#include "fob/results.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob::pictures {

// The fields a shape is told apart by (every case field but the strategy), in the order
// descriptions list them.
inline const std::vector<std::string>& shape_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> out;
    for (const CaseField& f : case_fields()) {
      if (f.shape) out.emplace_back(f.name);
    }
    return out;
  }();
  return fields;
}

// "tokens": batch × seq, an axis of the speedup picture that is no field of its own.
inline constexpr const char* kTokens = "tokens";

// A numeric field's value, or tokens; 0 for workload and dtype.
inline double field_number(const CaseKey& s, const std::string& field) {
  if (field == kTokens) return static_cast<double>(s.batch * s.seq);
  const CaseField* f = find_case_field(field);
  return f == nullptr ? 0 : f->number(s);
}

inline std::string field_text(const CaseKey& s, const std::string& field) {
  if (field == kTokens) return std::to_string(s.batch * s.seq);
  const CaseField* f = find_case_field(field);
  return f == nullptr || !f->listed(s) ? "" : f->text(s);
}

// A field as a description names it: "hidden 512", a text field by its value alone ("fp32").
inline std::string named_value(const CaseField& f, const CaseKey& s) {
  return (f.type() == CaseFieldType::text ? "" : std::string(f.name) + " ") + f.text(s);
}

// The shape fields every one of `rows` shares, as text ("mlp, hidden 512, ffn 2048, fp32,
// world 2"); the fields that vary are what the picture draws along or labels. A field that does
// not shape the workload (heads of an mlp) is left out.
inline std::string common_shape(const std::vector<const Summary*>& rows) {
  if (rows.empty()) return "";
  std::string text;
  for (const CaseField& f : case_fields()) {
    if (!f.shape || !f.applies(*rows.front())) continue;
    bool same = true;
    for (const Summary* r : rows)
      same &= field_text(*r, f.name) == field_text(*rows.front(), f.name);
    if (same) text += (text.empty() ? "" : ", ") + named_value(f, *rows.front());
  }
  return text;
}

// "mlp batch 2 × seq 72, hidden 33, ffn 96, fp32, world 2": the fields that shape the case.
inline std::string shape_text(const CaseKey& c) {
  std::string s =
      c.workload + " batch " + std::to_string(c.batch) + " × seq " + std::to_string(c.seq);
  for (const CaseField& f : case_fields()) {
    const std::string name = f.name;
    if (!f.shape || !f.applies(c) || name == "workload" || name == "batch" || name == "seq") {
      continue;  // the strategy is no part of the shape; the first three lead it
    }
    s += ", " + named_value(f, c);
  }
  return s;
}

}  // namespace fob::pictures
