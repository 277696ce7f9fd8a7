// Strings from a results file reach JSON, Markdown, CSV and LaTeX as text a terminal or a JSON
// parser takes safely: no raw control character (an ESC sequence would drive the reader's
// terminal, a line break would forge a header line), and valid UTF-8 however bad the bytes.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "../common/small_case.h"
#include "core/json_text.h"
#include "fob/report.h"
#include "fob/results.h"
#include "fob/trace.h"
#include "fob/types.h"

namespace fob {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";
// Hostile bytes: ESC sequences, CR/LF, BEL, DEL, a C1 CSI, a stray continuation byte, an
// overlong '/', a surrogate, a cut 3-byte sequence, a value past U+10FFFF.
const std::string kHostile =
    "h\x1b]0;owned\x07\r\nx\x7f\xC2\x9B\x80\xC0\xAF\xED\xA0\x80\xE2\x82\xF4\x90\x80\x80";

// The well-formed UTF-8 sequences (the Unicode standard's Table 3-7): a lead byte's range, the
// sequence's length and the range of its second byte; later bytes are 80..BF.
struct Utf8Row {
  unsigned char lead_lo, lead_hi;
  size_t length;
  unsigned char second_lo, second_hi;
};
constexpr Utf8Row kUtf8Rows[] = {
    {0x00, 0x7F, 1, 0, 0},       {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF},
    {0xE1, 0xEC, 3, 0x80, 0xBF}, {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF},
    {0xF0, 0xF0, 4, 0x90, 0xBF}, {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

// The length of the well-formed sequence at `at`, 0 where none starts there.
size_t utf8_sequence(const std::string& text, size_t at) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[at + k]); };
  for (const Utf8Row& row : kUtf8Rows) {
    if (byte(0) < row.lead_lo || byte(0) > row.lead_hi) continue;
    if (at + row.length > text.size()) return 0;
    for (size_t k = 1; k < row.length; ++k) {
      const unsigned char lo = k == 1 ? row.second_lo : 0x80, hi = k == 1 ? row.second_hi : 0xBF;
      if (byte(k) < lo || byte(k) > hi) return 0;
    }
    return row.length;
  }
  return 0;
}

// Whether `text` is well-formed UTF-8.
bool valid_utf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Control characters other than the line breaks `allowed` (C0, DEL; C1 as UTF-8).
bool has_control(const std::string& text, const std::string& allowed = "") {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 || c == 0x7F) && allowed.find(static_cast<char>(c)) == std::string::npos) {
      return true;
    }
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      return true;
    }
  }
  return false;
}

TEST(JsonString, EscapesEveryControlCharacterAndReplacesInvalidBytes) {
  const std::string json = json_string(kHostile);
  EXPECT_TRUE(valid_utf8(json)) << json;
  EXPECT_FALSE(has_control(json)) << json;
  EXPECT_EQ(json, "\"h\\u001b]0;owned\\u0007\\r\\nx\\u007f\\u009b" + kFffd + kFffd + kFffd + kFffd +
                      kFffd + kFffd + kFffd + kFffd + kFffd + kFffd + kFffd + kFffd + "\"");
}

TEST(JsonString, PassesValidUtf8AndEscapesJavaScriptLineEnds) {
  EXPECT_EQ(json_string("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9D\x84\x9E \"q\" \\"),
            "\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9D\x84\x9E \\\"q\\\" \\\\\"");
  EXPECT_EQ(json_string("a\xE2\x80\xA8"
                        "b\xE2\x80\xA9"),
            "\"a\\u2028b\\u2029\"");
}

TEST(OneLineText, LeavesNoControlCharacterAndNoInvalidByte) {
  const std::string line = one_line_text(kHostile);
  EXPECT_TRUE(valid_utf8(line)) << line;
  EXPECT_FALSE(has_control(line)) << line;
  EXPECT_EQ(line.substr(0, 15), "h" + kFffd + "]0;owned" + kFffd);
  EXPECT_EQ(one_line_text("two\r\nlines\tand \xC3\xA9"), "two  lines and \xC3\xA9");
}

ResultFile hostile_file() {
  ResultFile file;
  file.system.hostnames = kHostile + ",node2";
  file.system.backend = kHostile;
  file.system.timer = kHostile;
  file.system.notes = kHostile;
  file.system.world_size = 1;
  file.run.command_line = kHostile;
  CaseResult c = small_case("0001", 1);
  c.strategy = kHostile;
  c.tasks[0].label = kHostile;
  c.iters = 1;
  c.task_start = {0.0};
  c.task_end = {1e-3};
  c.step_seconds = {1e-3};
  file.cases.push_back(c);
  return file;
}

TEST(HostileStrings, ReachNoReportOrTraceRaw) {
  const ResultFile file = hostile_file();
  for (const TableFormat format : all_table_formats()) {
    std::ostringstream out;
    write_report(out, file, format, {});
    EXPECT_TRUE(valid_utf8(out.str())) << out.str();
    // Line ends and tabs are a format's own (a table of tab-separated values); no other control
    // character from the file reaches a terminal.
    EXPECT_FALSE(has_control(out.str(), "\n\t")) << format->name << ":\n" << out.str();
    // Each header fact stays on its own line: no line starts with what followed a CR or LF.
    EXPECT_EQ(out.str().find("\nx"), std::string::npos) << out.str();
  }
  std::ostringstream trace;
  write_trace_json(trace, file, "", -1);
  EXPECT_TRUE(valid_utf8(trace.str())) << trace.str();
  EXPECT_FALSE(has_control(trace.str(), "\n")) << trace.str();
  EXPECT_NE(trace.str().find("\\u001b"), std::string::npos);
}

// An error message carries paths and values from anyone: on the terminal, a control character
// is \xNN (lines and tabs kept), and a huge one is cut.
TEST(Printable, ShowsControlCharactersAndCutsFloods) {
  EXPECT_EQ(printable("cannot open '\x1b[31mred\x07' as HDF5\n\tnext"),
            "cannot open '\\x1b[31mred\\x07' as HDF5\n\tnext");
  EXPECT_EQ(printable(std::string("a\0b\x7f", 4)), "a\\x00b\\x7f");
  const std::string flood = printable(std::string(100000, 'x'));
  EXPECT_EQ(flood, std::string(kMaxMessageBytes, 'x') + "... (100000 bytes)");
}

}  // namespace
}  // namespace fob
