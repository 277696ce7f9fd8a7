// Test harness: n ranks as n forked processes joined to one fresh id, as mpirun would start them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine.h"

namespace fobnccl::test {

struct Outcome {
  std::vector<int> codes;  // each rank's exit code; -1 if it had to be killed
  std::string err;         // every rank's stderr, rank by rank
  double seconds = 0;      // until the last rank exited
};

// A rule reported in a rank prints as the model does and exits 86 (FOB_MODEL_FATAL=1).
constexpr int kViolationExit = 86;

// Runs body(comm) in each rank; its return value is the rank's exit code. deadlock_s and join_s:
// the engine's settings; limit_s: when the ranks still running are killed.
Outcome run_ranks(int n, const std::function<int(Comm&)>& body, double deadlock_s = 2,
                  double limit_s = 60, double join_s = 20);

}  // namespace fobnccl::test
