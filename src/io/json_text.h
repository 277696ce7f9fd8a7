// Text helpers shared by every JSON and CSV writer (report, trace, compare), so that all of
// them quote the same way.
#pragma once

#include <string>

namespace fob {

// A JSON string literal, quotes included; control characters escaped, UTF-8 passed through.
std::string json_string(const std::string& text);

// A JSON number with `digits` significant digits; null for NaN and infinities, which JSON
// lacks (an unbounded interval's end, a metric without its reference).
std::string json_number(double v, int digits = 15);

// A CSV field, quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);

}  // namespace fob
