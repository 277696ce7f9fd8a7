// Long YAML lists for the tests of sweep bounds.
#pragma once

#include <string>

namespace fob {

// "KEY: [1, 2, ..., N]\n"
inline std::string yaml_list(const std::string& key, int n) {
  std::string text = key + ": [";
  for (int i = 1; i <= n; ++i) text += (i > 1 ? ", " : "") + std::to_string(i);
  return text + "]\n";
}

}  // namespace fob
