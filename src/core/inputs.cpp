#include "fob/inputs.h"

#include "fob/types.h"

namespace fob {
namespace {

uint64_t mix(uint64_t x) {
  // splitmix64: cheap, well spread, and the same on every rank and machine.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::pair<int64_t, double> selection_entry(uint64_t seed, const std::string& tensor, int64_t col,
                                           int64_t select_from) {
  const uint64_t h = mix(mix(seed ^ fnv1a(tensor)) ^ (static_cast<uint64_t>(col) << 1));
  return {static_cast<int64_t>((h >> 1) % static_cast<uint64_t>(select_from)),
          (h & 1) ? 1.0 : -1.0};
}

double input_value(uint64_t seed, const std::string& tensor, int64_t row, int64_t col,
                   int64_t select_from, int64_t period) {
  if (tensor == "zeros") return 0.0;
  if (period > 0) {
    // A selection matrix keeps its one +-1 per column: only its columns repeat.
    col %= period;
    if (select_from == 0) row %= period;
  }
  if (select_from > 0) {
    const auto [pick, sign] = selection_entry(seed, tensor, col, select_from);
    return row == pick ? sign : 0.0;
  }
  uint64_t h = mix(seed ^ fnv1a(tensor));
  h = mix(h ^ static_cast<uint64_t>(row));
  h = mix(h ^ (static_cast<uint64_t>(col) << 1));
  return static_cast<double>(static_cast<int>(h % 3) - 1);
}

void fill_input(const Plan& plan, const InputRegion& region, uint64_t seed, double* out) {
  const int64_t cols = plan.buffers[region.buffer].cols;
  for (int64_t i = 0; i < region.rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[i * cols + j] = input_value(seed, region.tensor, region.global_row + i,
                                      region.global_col + j, region.select_from, plan.input_period);
    }
  }
}

}  // namespace fob
