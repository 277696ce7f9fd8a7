// Simulated step times are what they were: every case of every shipped config, at every world
// of 2, 4, 8 and 16 its shapes divide by, on two fixed machines, against the exact bits of
// tests/data/sim_step_times.txt (simulated with every rank before the rotation quotient).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../common/golden_machines.h"
#include "../common/shipped_cases.h"
#include "fob/sim.h"

namespace fob {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// "<case key>|<machine>" -> the step time's hex float, as the simulator gives it today.
std::map<std::string, std::string> simulate_shipped(const fs::path& root) {
  const std::vector<Machine> machines = golden_machines();
  std::map<std::string, std::string> out;
  for (const ShippedCase& c : shipped_cases(root)) {
    for (const Machine& m : machines) {
      const CaseResult r = simulate_spec(c.spec, MachineCost(m), "g");
      out[CaseKey::of(c.spec).text() + "|" + m.name] = hex(r.step(0));
    }
  }
  return out;
}

TEST(SimGolden, StepTimesUnchanged) {
  const char* root = std::getenv("FOB_SOURCE_DIR");
  if (!root || !*root) GTEST_SKIP() << "FOB_SOURCE_DIR is not set (ctest sets it)";
  const std::map<std::string, std::string> now = simulate_shipped(root);
  if (const char* write = std::getenv("FOB_SIM_GOLDEN_WRITE")) {
    // Regeneration: the header is kept, the times replaced.
    const fs::path golden = fs::path(root) / "tests/data/sim_step_times.txt";
    std::istringstream old(read(golden));
    std::ofstream out(write);
    for (std::string line; std::getline(old, line) && line.rfind('#', 0) == 0;) out << line << "\n";
    for (const auto& [key, value] : now) out << key << "|" << value << "\n";
    GTEST_SKIP() << "wrote " << write;
  }
  std::istringstream golden(read(fs::path(root) / "tests/data/sim_step_times.txt"));
  int compared = 0;
  for (std::string line; std::getline(golden, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.rfind('|');
    ASSERT_NE(bar, std::string::npos) << line;
    const std::string key = line.substr(0, bar), value = line.substr(bar + 1);
    const auto it = now.find(key);
    ASSERT_NE(it, now.end()) << key << " is no longer a case of the shipped configs";
    // The same bits: compared as numbers read back from the hex floats.
    EXPECT_EQ(std::strtod(it->second.c_str(), nullptr), std::strtod(value.c_str(), nullptr))
        << key << ": " << it->second << " now, " << value << " before";
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(now.size())) << "cases not in the golden file";
  EXPECT_GT(compared, 3000);
}

}  // namespace
}  // namespace fob
