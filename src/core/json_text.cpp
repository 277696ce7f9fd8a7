#include "json_text.h"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace fob {
namespace {

constexpr const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD, in UTF-8

struct CodePoint {
  char32_t value = 0;
  size_t length = 0;  // 0: the bytes at this place are not valid UTF-8
};

// The code point at text[i]; length 0 for a stray continuation byte, a cut sequence, an
// overlong form, a surrogate or a value past U+10FFFF.
CodePoint decode_utf8(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  CodePoint c;
  char32_t least = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    c = {static_cast<char32_t>(lead & 0x1F), 2};
    least = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    c = {static_cast<char32_t>(lead & 0x0F), 3};
    least = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    c = {static_cast<char32_t>(lead & 0x07), 4};
    least = 0x10000;
  } else {
    return {};
  }
  if (i + c.length > text.size()) return {};
  for (size_t k = 1; k < c.length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    c.value = c.value << 6 | (byte(i + k) & 0x3F);
  }
  if (c.value < least || c.value > 0x10FFFF || (c.value >= 0xD800 && c.value <= 0xDFFF)) return {};
  return c;
}

// Calls visit(code point, its bytes) along `text`; the bytes are empty for one byte that is
// not valid UTF-8.
template <typename Visit>
void for_each_code_point(const std::string& text, Visit visit) {
  for (size_t i = 0; i < text.size();) {
    const CodePoint c = decode_utf8(text, i);
    visit(c.value, std::string_view(text).substr(i, c.length));
    i += c.length > 0 ? c.length : 1;
  }
}

// C0, DEL and C1.
bool is_control(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F);
}

bool is_line_end(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x2028 || c == 0x2029;
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
    if (bytes.empty()) {
      out += kReplacement;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (is_control(c) || is_line_end(c)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += bytes;
    }
  });
  return out + "\"";
}

std::string clean_text(const std::string& raw, bool multiline) {
  std::string out;
  out.reserve(raw.size());
  for_each_code_point(raw, [&](char32_t c, std::string_view bytes) {
    const bool kept = multiline && (c == '\n' || c == '\t');
    if (bytes.empty() || (is_control(c) && !kept)) {
      out += kReplacement;
    } else {
      out += bytes;
    }
  });
  return out;
}

std::string one_line_text(const std::string& text) {
  std::string out;
  for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
    if (bytes.empty()) {
      out += kReplacement;
    } else if (c == '\t' || is_line_end(c)) {
      out += ' ';
    } else if (is_control(c)) {
      out += kReplacement;
    } else {
      out += bytes;
    }
  });
  return out;
}

std::string json_number(double v, int digits) {
  if (!std::isfinite(v)) return "null";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

}  // namespace fob
