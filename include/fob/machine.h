// A machine file (YAML, bench_configs/machines/): what the simulator prices plans with. GEMMs
// follow a roofline with a measured efficiency table; links come in classes joined by a
// topology; GEMMs may slow down while a transfer runs on their device. `fobench calibrate`
// fits one from measured results files.
//
// Format (every key below is required unless marked optional; unknown keys are errors):
//
//   name: h100_nvlink_ib
//   source: "where the numbers come from"        # printed with every simulated table
//   compute:                                      # one entry per dtype: fp32, fp64, bf16, fp16
//     bf16:
//       peak_tflops: 989                          # 1e12 flop/s of one device (rank), > 0
//       memory_gbytes_per_s: 3350                 # 1e9 bytes/s, > 0
//       gemm_efficiency:                          # optional; [m, n, k, fraction of peak in (0, 1]]
//         - [512, 512, 512, 0.3]
//         - [8192, 8192, 8192, 0.75]
//   links:                                        # link classes, names unique
//     - {name: nvlink, latency_us: 3, gbytes_per_s: 450}   # 1e9 bytes/s per rank and direction
//     - {name: ib, latency_us: 5, gbytes_per_s: 50}
//   topology: {ranks_per_node: 8, intra_node: nvlink, inter_node: ib}   # names from links
//   contention: 1.05                              # optional, >= 1; default 1 (GEMMs only), or
//   contention: {gemm: 1.05, transfer: 1.2, comm_start_us: 40}   # every key optional
//   launch_us: {compute: 5, comm: 10}             # optional, >= 0; default 0
//
// Pricing (MachineCost): a GEMM takes batch * max(flops / (peak * eff(m, n, k)),
// (m*k + k*n + m*n) * element size / memory bandwidth) per batch entry (a roofline); add takes
// 3 * m * n * element size / memory bandwidth, copy and softmax 2 * (memory bound). eff is
// interpolated by inverse-distance weighting (power 4) in (log m, log n, log k) after clamping
// the shape into the table's range per dimension: exact at table points, between the smallest
// and largest efficiency everywhere, and constant beyond the table's edges. A message from rank
// a to rank b takes latency + bytes / gbytes_per_s of intra_node when a / ranks_per_node ==
// b / ranks_per_node, else of inter_node.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "fob/sim.h"
#include "fob/types.h"

namespace fob {

// Achieved fraction of peak for one GEMM shape (C[m, n] = A[m, k] * B[k, n], per batch entry).
struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;
  double efficiency = 1;
};

// One dtype's GEMM and element-wise speed.
struct ComputeModel {
  double peak_flops = 0;                   // flop/s of one device (rank)
  double memory_bytes_per_s = 0;           // the roofline's memory side, and add/copy/softmax speed
  std::vector<GemmPoint> gemm_efficiency;  // interpolated between points; empty: 1 everywhere
};

struct LinkClass {
  std::string name;  // "nvlink", "pcie", "ib", "shm", ...
  double latency_s = 0;
  double bytes_per_s = 0;  // per rank and direction
};

struct Machine {
  std::string name;
  std::string source;  // where the numbers come from, printed with every simulated table
  std::map<DType, ComputeModel> compute;
  std::vector<LinkClass> links;
  // Topology: ranks fill nodes in order, ranks_per_node each; ranks on one node talk over
  // intra_node, ranks on different nodes over inter_node (LinkClass names).
  int ranks_per_node = 8;
  std::string intra_node;
  std::string inter_node;
  // A GEMM runs this many times slower while its rank has a transfer in flight (NCCL's SMs).
  double contention = 1;
  // The other direction: a transfer runs this many times slower while a rank at either end of
  // it (of a collective: either rank of a link of its running step) computes, and one that
  // becomes ready while its rank computes (or launches a compute task) starts up to this long
  // after its launch (at the latest when that compute task ends, at the earliest when its
  // launch is over).
  // On a GPU, NCCL kernels wait for SMs a GEMM holds; on the CPU backend the comm thread waits
  // for the core a GEMM holds.
  double transfer_contention = 1;
  double comm_start_delay_s = 0;
  // From a task's becoming ready to its start, per stream: kernel launch and stream wake-up.
  double launch_compute_s = 0;
  double launch_comm_s = 0;
};

// Reads a machine file. InputError naming the file, line, key and the valid choices.
Machine load_machine(const std::string& path);
Machine parse_machine(const std::string& yaml_text, const std::string& source);

// Writes `machine` as a machine file that load_machine reads back, with comments.
void save_machine(std::ostream& out, const Machine& machine);

// Prices tasks and messages with a Machine for plans of one dtype.
class MachineCost : public CostModel {
 public:
  explicit MachineCost(const Machine& machine);  // InputError if a needed piece is missing
  double compute_seconds(const Task& t, DType dtype, int rank) const override;
  double transfer_seconds(int64_t bytes, int from_rank, int to_rank) const override;
  double latency_seconds(int from_rank, int to_rank) const override;
  double bytes_per_second(int from_rank, int to_rank) const override;
  int link_class(int from_rank, int to_rank) const override;
  double compute_slowdown_while_transferring() const override;
  double transfer_slowdown_while_computing() const override;
  double comm_start_delay_while_computing() const override;
  double launch_seconds(StreamId stream) const override;
  // 1 within one node; ranks_per_node over whole nodes, where moving every rank by a node keeps
  // each pair on or off a node; else world (a part-filled last node breaks the symmetry).
  int rotation_period(int world) const override;

  // InputError naming `dtype` and the dtypes the machine has, unless it has `dtype`.
  void require(DType dtype) const;
  // The interpolated efficiency table of `dtype` at one GEMM shape (1 without a table).
  double gemm_efficiency(DType dtype, int64_t m, int64_t n, int64_t k) const;

 private:
  // One dtype's table in log space: (log m, log n, log k, efficiency) and the per-dimension
  // bounds the query is clamped into.
  struct Table {
    std::vector<std::array<double, 4>> points;
    std::array<double, 3> lo{}, hi{};
  };
  const LinkClass& link(int from_rank, int to_rank) const;
  Machine machine_;
  int intra_ = -1, inter_ = -1;  // indices into machine_.links
  std::map<DType, Table> tables_;
};

}  // namespace fob
