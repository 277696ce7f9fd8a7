// What a toy registered from outside fobench's sources (toy_strategy_test, toy_workload_test)
// must get with no other change: its cases run and verified by the executor on the CPU
// backend, its plans priced by the simulator and its file calibrated.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fob/backend.h"
#include "fob/calibrate.h"
#include "fob/executor.h"
#include "fob/machine.h"
#include "fob/sim.h"
#include "fob/workload.h"

namespace fob {

// Every case run as `fobench run` runs it, ids "0000", "0001", ...; the gathered results are
// complete on rank 0 only.
inline ResultFile run_toy_cases(const std::vector<CaseSpec>& specs, int rank, int world) {
  auto backend = make_cpu_backend({});
  Executor executor(*backend, MPI_COMM_WORLD);
  ExecOptions options;
  options.iters = 3;
  options.warmup = 1;
  options.timeout_s = 60;
  ResultFile file;
  file.system.backend = "cpu";
  file.system.world_size = world;
  for (size_t i = 0; i < specs.size(); ++i) {
    const Plan plan = make_plan(specs[i], rank);
    file.cases.push_back(executor.run_case(plan, options, "000" + std::to_string(i)));
  }
  return file;
}

// The simulator prices `spec`'s plans on a shipped machine file, and calibrate regenerates every
// case's plans from the file (by the names it records) and fits them.
inline void expect_simulated_and_calibrated(const ResultFile& file, const CaseSpec& spec,
                                            int world) {
  const char* source = std::getenv("FOB_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const MachineCost cost(
      load_machine(std::string(source) + "/bench_configs/machines/h100_nvlink_ib.yaml"));
  EXPECT_GT(simulate_case(make_plans(spec), cost, "toy").step(0), 0);
  if (world > 1) {
    FitReport fit;
    const Machine machine = calibrate({file}, "toy-machine", &fit);
    EXPECT_FALSE(machine.links.empty());
  }
}

}  // namespace fob
