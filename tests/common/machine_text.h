// Helpers for tests of machine files: a parse's error text, a file with one piece replaced,
// and a GEMM task of a given shape.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fob/machine.h"

namespace fob {

inline std::string machine_error_of(const std::string& text) {
  try {
    parse_machine(text, "m.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// `text` with the first `from` replaced by `to` (a test failure when `from` is not there).
inline std::string replaced_in(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

inline Task gemm_task(int64_t m, int64_t n, int64_t k, int batch = 1) {
  Task t;
  t.kind = TaskKind::gemm;
  t.m = m;
  t.n = n;
  t.k = k;
  t.batch = batch;
  t.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * batch;
  return t;
}

}  // namespace fob
