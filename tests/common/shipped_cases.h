// Every case of every config shipped in bench_configs/, at each world of 2, 4, 8 and 16 that
// its shapes divide by: what the simulator's exactness tests run over.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fob/cases.h"
#include "fob/config.h"
#include "fob/workload.h"

namespace fob {

struct ShippedCase {
  std::string config;  // the file's name
  CaseSpec spec;
};

inline std::vector<ShippedCase> shipped_cases(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> configs;
  for (const auto& e : std::filesystem::directory_iterator(root / "bench_configs")) {
    if (e.path().extension() == ".yaml") configs.push_back(e.path());
  }
  std::sort(configs.begin(), configs.end());
  std::vector<ShippedCase> out;
  for (const auto& path : configs) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    Config config;
    apply_yaml(config, text.str(), path.string());
    for (const Config& point : expand_sweep(config)) {
      for (int world : {2, 4, 8, 16}) {
        std::vector<CaseSpec> specs;
        try {
          specs = make_cases(point, world);
        } catch (const InputError&) {
          continue;  // the shape does not divide by this world
        }
        for (const CaseSpec& spec : specs) out.push_back({path.filename().string(), spec});
      }
    }
  }
  return out;
}

}  // namespace fob
