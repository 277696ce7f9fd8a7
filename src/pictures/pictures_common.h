// What the pictures say the same way: a shape's fields and how a shape is described.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/metrics.h"
#include "fob/results.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob::pictures {

// The fields a shape is told apart by, in the order descriptions list them.
inline const std::vector<std::string>& shape_fields() {
  static const std::vector<std::string> fields{"workload", "batch", "seq",   "hidden",
                                               "ffn",      "heads", "dtype", "world"};
  return fields;
}

// A numeric field's value ("tokens" is batch × seq); 0 for workload and dtype.
inline int64_t field_number(const Summary& s, const std::string& field) {
  if (field == "world") return s.world;
  if (field == "tokens") return s.batch * s.seq;
  if (field == "seq") return s.seq;
  if (field == "batch") return s.batch;
  if (field == "hidden") return s.hidden;
  if (field == "ffn") return s.ffn;
  if (field == "heads") return s.heads;
  return 0;
}

inline std::string field_text(const Summary& s, const std::string& field) {
  if (field == "workload") return s.workload;
  if (field == "dtype") return s.dtype;
  return std::to_string(field_number(s, field));
}

// The shape fields every one of `rows` shares, as text ("mlp, hidden 512, ffn 2048, fp32,
// world 2"); the fields that vary are what the picture draws along or labels.
inline std::string common_shape(const std::vector<const Summary*>& rows) {
  if (rows.empty()) return "";
  std::string text;
  for (const std::string& f : shape_fields()) {
    bool same = true;
    for (const Summary* r : rows) same &= field_text(*r, f) == field_text(*rows.front(), f);
    if (!same || (f == "heads" && !has_heads(rows.front()->workload))) continue;
    text += (text.empty() ? "" : ", ") + (f == "workload" || f == "dtype" ? "" : f + " ") +
            field_text(*rows.front(), f);
  }
  return text;
}

template <typename C>  // CaseResult or Summary: both carry the shape fields
std::string shape_text(const C& c) {
  std::string s = c.workload + " batch " + std::to_string(c.batch) + " × seq " +
                  std::to_string(c.seq) + ", hidden " + std::to_string(c.hidden) + ", ffn " +
                  std::to_string(c.ffn);
  // Heads shape only attention; every case records the shape's default count.
  if (has_heads(c.workload)) s += ", heads " + std::to_string(c.heads);
  return s + ", " + c.dtype + ", world " + std::to_string(c.world);
}

}  // namespace fob::pictures
