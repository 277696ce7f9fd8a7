#include "fob/types.h"

#include <array>
#include <cstdio>
#include <string>

#include "fob/config.h"

namespace fob {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::fp64:
      return "fp64";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
  }
  return "?";
}

namespace {
constexpr DType kAllDTypes[] = {DType::fp32, DType::fp64, DType::bf16, DType::fp16};
}  // namespace

std::string dtype_choices() {
  std::string out;
  for (DType d : kAllDTypes) out += (out.empty() ? "" : ", ") + std::string(to_string(d));
  return out;
}

DType parse_dtype(const std::string& text) {
  for (DType d : kAllDTypes) {
    if (text == to_string(d)) return d;
  }
  throw InputError("dtype: " + quote_value(text) + " is not a dtype; valid: " + dtype_choices());
}

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return 4;
    case DType::fp64:
      return 8;
    case DType::bf16:
    case DType::fp16:
      return 2;
  }
  return 0;
}

std::string printable(const std::string& message) {
  std::string out;
  for (const char c : message) {
    const auto ch = static_cast<unsigned char>(c);
    if ((ch < 0x20 && c != '\n' && c != '\t') || ch == 0x7f) {
      char text[8];
      std::snprintf(text, sizeof text, "\\x%02x", ch);
      out += text;
    } else {
      out += c;
    }
    if (out.size() > kMaxMessageBytes) {
      return out.substr(0, kMaxMessageBytes) + "... (" + std::to_string(message.size()) + " bytes)";
    }
  }
  return out;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  return h;
}

}  // namespace fob
