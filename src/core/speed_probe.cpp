// The host speed probe (fob/speed_probe.h): plain loops rather than BLAS, so that neither a
// library's threads nor its dispatch change the work it times.
#include "fob/speed_probe.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <limits>

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

HostCpu host_cpu_now() {
  HostCpu h;
  h.wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) {
    h.own = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
            static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  }
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return h;
  unsigned long long v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                              &v[3], &v[4], &v[5], &v[6], &v[7]);
  std::fclose(f);
  const long tick = sysconf(_SC_CLK_TCK);
  if (got == 8 && tick > 0) {
    // user, nice, system, (idle, iowait skipped), irq, softirq, steal
    h.busy =
        static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / static_cast<double>(tick);
    h.steal = static_cast<double>(v[7]) / static_cast<double>(tick);
  }
  return h;
}

double host_load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return std::numeric_limits<double>::quiet_NaN();
  double load = std::numeric_limits<double>::quiet_NaN();
  if (std::fscanf(f, "%lf", &load) != 1) load = std::numeric_limits<double>::quiet_NaN();
  std::fclose(f);
  return load;
}

}  // namespace fob
