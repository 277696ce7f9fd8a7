// The two machines tests/data/sim_step_times.txt was simulated on: defined here rather than
// read from bench_configs/machines, so that retuning a shipped machine file does not move the
// golden times. One H100-like node of 8 ranks with every mechanism of the cost model switched
// on (GEMM efficiency tables, contention both ways, a posting delay, launch overheads); and
// the same rates at 2 ranks a node with none of those, so that most worlds span nodes.
#pragma once

#include <string>
#include <vector>

#include "fob/machine.h"

namespace fob {

inline std::vector<Machine> golden_machines() {
  Machine busy;
  busy.name = "golden_busy_node8";
  busy.links = {{"nvlink", 3e-6, 450e9, {}}, {"ib", 5e-6, 50e9, {}}};
  busy.intra_node = "nvlink";
  busy.inter_node = "ib";
  busy.ranks_per_node = 8;
  const std::vector<GemmPoint> table = {{256, 256, 256, 0.35},
                                        {1024, 1024, 1024, 0.7},
                                        {4096, 4096, 4096, 0.8},
                                        {8192, 512, 8192, 0.6}};
  busy.compute[DType::fp32] = {67e12, 3.35e12, table, {}, 0};
  busy.compute[DType::fp64] = {34e12, 3.35e12, table, {}, 0};
  busy.compute[DType::bf16] = {989e12, 3.35e12, table, {}, 0};
  busy.compute[DType::fp16] = {989e12, 3.35e12, table, {}, 0};
  busy.contention = 1.05;
  busy.transfer_contention = 1.2;
  busy.comm_start_delay_s = 2e-6;
  busy.launch_compute_s = 4e-6;
  busy.launch_comm_s = 6e-6;

  Machine plain = busy;
  plain.name = "golden_plain_node2";
  plain.ranks_per_node = 2;
  for (auto& [dtype, c] : plain.compute) c.gemm_efficiency.clear();
  plain.contention = 1;
  plain.transfer_contention = 1;
  plain.comm_start_delay_s = 0;
  plain.launch_compute_s = plain.launch_comm_s = 0;
  return {busy, plain};
}

}  // namespace fob
