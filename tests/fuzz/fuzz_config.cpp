// libFuzzer target over the config loader (include/fob/config.h): a YAML text applied to the
// defaults, validated and expanded into its sweep's points, as `fobench run -c` does. Any
// crash, sanitizer report or exception other than InputError is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fob/config.h"
#include "fob/types.h"

namespace {

// A sweep's points are the product of its lists' lengths (times its `cases`): a config may ask
// for millions, which a run would then measure. Expanding is fuzzed where it stays small.
constexpr size_t kMaxPoints = 4096;

size_t sweep_points(const fob::Config& config) {
  size_t points = config.cases.empty() ? 1 : config.cases.size();
  for (const auto& [key, values] : config.sweep) {
    if (values.empty()) continue;
    if (points > kMaxPoints / values.size()) return kMaxPoints + 1;
    points *= values.size();
  }
  return points;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fob::Config config;
  try {
    fob::apply_yaml(config, text, "fuzz.yaml");
    fob::validate_config(config);
    if (sweep_points(config) <= kMaxPoints) {
      for (const fob::Config& point : fob::expand_sweep(config)) fob::validate_config(point);
    }
    (void)config.to_yaml();
  } catch (const fob::InputError&) {
    // Refused as bad input, naming the key: what the loader is for.
  }
  return 0;
}
