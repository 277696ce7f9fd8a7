// The host speed probe (fob/speed_probe.h): plain loops rather than BLAS, so that neither a
// library's threads nor its dispatch change the work it times.
#include "fob/speed_probe.h"

#include <algorithm>
#include <array>
#include <chrono>

namespace fob {

namespace {

constexpr int kN = 64;

// One timed 64^3 GEMM, four times over.
double timed_gemms(std::array<float, kN * kN>& a, const std::array<float, kN * kN>& b,
                   std::array<float, kN * kN>& c) {
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 4; ++rep) {
    for (int i = 0; i < kN; ++i) {
      for (int j = 0; j < kN; ++j) c[i * kN + j] = 0;
      for (int k = 0; k < kN; ++k) {
        const float aik = a[i * kN + k];
        for (int j = 0; j < kN; ++j) c[i * kN + j] += aik * b[k * kN + j];
      }
    }
    // Feeds the next repetition, so no repetition is work the compiler may skip.
    a[rep] = c[(rep * 131) % (kN * kN)] * 1e-6f;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double host_speed_probe() {
  static std::array<float, kN * kN> a, b, c;
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  // The least of three: an interrupt lengthens one of them, a slow phase all three.
  double best = timed_gemms(a, b, c);
  for (int i = 0; i < 2; ++i) best = std::min(best, timed_gemms(a, b, c));
  volatile float sink = c[kN * kN - 1];
  (void)sink;
  return best;
}

}  // namespace fob
