// The smallest case a results file holds: ag_gemm baseline, one GEMM task per rank, no
// iterations yet. Tests of the file format add the timings they need.
#pragma once

#include <string>

#include "case_result_builder.h"
#include "fob/results.h"

namespace fob {

inline CaseResult small_case(const std::string& id, int world) {
  CaseResult c = case_result({.id = id, .world = world, .verified = 1});
  c.max_tasks = 1;
  for (int r = 0; r < world; ++r) c.tasks.push_back(TaskRecord{r, 0, 0, 0, -1, 0, 1e6, "gemm"});
  return c;
}

// The system a file of small cases says it was taken on.
inline SystemInfo small_system(const std::string& backend, const std::string& transport, int world,
                               const std::string& timer) {
  SystemInfo s;
  s.backend = backend;
  s.transport = transport;
  s.world_size = world;
  s.link_emulation = "none";
  s.timer = timer;
  return s;
}

}  // namespace fob
