// Text helpers shared by every JSON and CSV writer (report, trace, compare), so that all of
// them quote the same way.
#pragma once

#include <string>

namespace fob {

// A JSON string literal, quotes included, that is valid UTF-8 whatever `text` holds (strings
// come from files anyone may have written): every control character, C0, DEL and C1, is
// escaped (\n, \u001b, ...), U+2028 and U+2029 too (JavaScript reads them as line ends), valid
// UTF-8 passes through and each byte that is not part of a valid sequence becomes U+FFFD.
std::string json_string(const std::string& text);

// `raw` as a results file's string is kept (h5io::clean_text, the journal): every control
// character but, when `multiline`, \n and \t, and each byte that is not valid UTF-8, becomes
// U+FFFD; valid UTF-8 passes through.
std::string clean_text(const std::string& raw, bool multiline);

// `text` fit for one line of Markdown, CSV or LaTeX, or a cell of a table: tabs and line
// breaks become spaces, any other control character (an ESC would reach the reader's
// terminal) and each byte that is not valid UTF-8 becomes U+FFFD.
std::string one_line_text(const std::string& text);

// A JSON number with `digits` significant digits; null for NaN and infinities, which JSON
// lacks (an unbounded interval's end, a metric without its reference).
std::string json_number(double v, int digits = 15);

// A CSV field, quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);

}  // namespace fob
