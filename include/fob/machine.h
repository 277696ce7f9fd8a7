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
//       gemm_tiles:                               # optional, needs `gpu`, not with
//       gemm_efficiency:
//         - [128, 256, 0.8]                       # [tile m, tile n, fraction of an SM's peak]
//       gemm_k_overhead: 64                       # optional, >= 0: k a tile pays besides its k
//       gemm_memory_efficiency: 0.45              # optional, (0, 1], default 1 (below)
//   gpu: {sms: 132, comm_sms: 16, max_split_k: 8} # optional: the wave model's SMs (below)
//   links:                                        # link classes, names unique
//     - {name: nvlink, latency_us: 3, gbytes_per_s: 450}   # 1e9 bytes/s per rank and direction
//     - name: ib                                  # optional `achieved`: NCCL's measured rates
//       latency_us: 5
//       gbytes_per_s: 50
//       achieved:                                 # per op: [size in bytes, 1e9 bytes/s], rising
//         all_gather: [[1048576, 20], [268435456, 45]]     # sizes; busbw as nccl-tests prints it
//         send_recv: [[1048576, 25], [268435456, 48]]      # (ops: all_gather, reduce_scatter,
//                                                          #  all_to_all, send_recv)
//   topology: {ranks_per_node: 8, intra_node: nvlink, inter_node: ib}   # names from links
//   contention: 1.05                              # optional, >= 1; default 1 (GEMMs only), or
//   contention: {gemm: 1.05, transfer: 1.2, comm_start_us: 40}   # every key optional
//   launch_us: {compute: 5, comm: 10}             # optional, >= 0; default 0
//   copy_engines: {count: 3, gbytes_per_s: 376, copy_us: 4}   # optional: --transport ce (below)
//
// Pricing (MachineCost): a GEMM takes batch * max(flops / (peak * eff(m, n, k)),
// (m*k + k*n + m*n) * element size / memory bandwidth) per batch entry (a roofline); add takes
// 3 * m * n * element size / memory bandwidth, copy and softmax 2 * (memory bound). eff is
// interpolated by inverse-distance weighting (power 4) in (log m, log n, log k) after clamping
// the shape into the table's range per dimension: exact at table points, between the smallest
// and largest efficiency everywhere, and constant beyond the table's edges. A message from rank
// a to rank b takes latency + bytes / gbytes_per_s of intra_node when a / ranks_per_node ==
// b / ranks_per_node, else of inter_node. gemm_memory_efficiency is the fraction of the memory
// bandwidth a GEMM's own operand traffic reaches: a thin GEMM (m below the ridge, a few hundred
// rows on a GPU) streams its weights through few tiles in flight and is bound by that rate, not
// by the copy rate element-wise kernels reach.
//
// The wave model (a dtype with gemm_tiles, on a machine with `gpu`): a GEMM runs as a kernel of
// tm x tn output tiles would, one tile per SM at a time, so a thin slice that fills few SMs, or
// a tile count just past a multiple of the SMs, costs what it costs on the GPU rather than what
// interpolation suggests. For each tile of the list and each split of k into s parts (s a
// power of 2 up to max_split_k, only while the split tiles fit in one wave): tiles =
// ceil(m/tm) * ceil(n/tn) * batch * s, waves = ceil(tiles / SMs), time = waves * 2 * tm * tn *
// (k/s + gemm_k_overhead) / (peak / sms * tile efficiency), plus, when s > 1, writing and
// reading s fp32 partial results of m x n at the memory bandwidth; the GEMM takes the fastest
// choice (as cuBLAS's heuristics aim to), and never less than the roofline's memory side. SMs
// is `sms`, or sms - comm_sms for a GEMM of an overlapping plan that may run beside a transfer
// (tasks_beside_transfers, as the cuda backend sets cublasSetSmCountTarget), on the links path;
// on copy engines see below.
//
// Achieved rates: a collective over a link class with an `achieved` table for its op runs each
// ring step at the table's bus bandwidth for the collective's size (nccl-tests' size: the
// gathered output of an all-gather, the input of a reduce-scatter or all-to-all) and no step
// latency, so alone it takes size * (N-1)/N / busbw, nccl-tests' time; a message over a class
// with a send_recv table flows at that table's rate for its bytes, without latency.
// Interpolation is linear in (log size, log rate); below the first size the time stays the
// first size's (latency-bound), above the last the rate stays the last's.
//
// Copy engines (`copy_engines`, priced only for a case whose transport is ce): count is the
// copy engines of a GPU (>= 1; what the reader and a later calibration see, not priced: the
// copies of one stream run one after another); gbytes_per_s (> 0) the rate of peer copies
// within a node, per rank and direction, all engines together; copy_us (>= 0) what each copy
// costs besides its bytes (stream memory operations signalling it, DMA setup). On ce every
// transfer stays within one node (a world past ranks_per_node is refused) and pays copy_us
// per copy it makes (a message one; a collective's block to each peer one, an all-to-all's one
// per chunk of it) plus its bytes at gbytes_per_s, shared as links are; no `achieved` table
// applies. A GEMM beside a ce transfer keeps all `sms`, except while its rank has a ce
// reduce-scatter in flight: the receiver's adds (one per partial received, 3 * block bytes at
// the dtype's memory bandwidth each, added to each ring step) then take comm_sms of them.
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

// One CTA tile a GEMM kernel may use and the fraction of an SM's peak it achieves.
struct GemmTile {
  int64_t m = 0, n = 0;
  double efficiency = 1;
};

// One dtype's GEMM and element-wise speed.
struct ComputeModel {
  double peak_flops = 0;                   // flop/s of one device (rank)
  double memory_bytes_per_s = 0;           // the roofline's memory side, and add/copy/softmax speed
  std::vector<GemmPoint> gemm_efficiency;  // interpolated between points; empty: 1 everywhere
  std::vector<GemmTile> gemm_tiles;        // the wave model's tiles (needs Machine::gpu)
  double gemm_k_overhead = 0;              // k a tile pays besides its share of k
  double gemm_memory_efficiency = 1;       // a GEMM's share of memory_bytes_per_s
};

// The SMs of one device, for the wave model.
struct GpuModel {
  int sms = 0;          // 0: no GPU section (the wave model is off)
  int comm_sms = 0;     // SMs an overlapping plan's GEMMs beside transfers leave to NCCL
  int max_split_k = 1;  // the largest split of k a GEMM may use (a power of 2)
};

// The copy engines of one device, for --transport ce.
struct CopyEngineModel {
  int count = 0;           // 0: no copy_engines section (ce cannot be priced)
  double bytes_per_s = 0;  // peer copies within a node, per rank and direction, all engines
  double copy_s = 0;       // each copy's cost besides its bytes: memop signalling, DMA setup
};

// A measured rate at one size (nccl-tests' size column and its busbw, or a message's bytes and
// its rate).
struct RatePoint {
  int64_t bytes = 0;
  double bytes_per_s = 0;
};

// The ops an `achieved` table may name: the collectives, and CollectiveOp::none's slot for
// point-to-point messages ("send_recv").
inline constexpr int kAchievedOps = 4;

struct LinkClass {
  std::string name;  // "nvlink", "pcie", "ib", "shm", ...
  double latency_s = 0;
  double bytes_per_s = 0;  // per rank and direction
  // Per op (achieved_index), measured rates by size; empty: latency + bytes / bytes_per_s.
  std::array<std::vector<RatePoint>, kAchievedOps> achieved;
};

// The slot of `op` in LinkClass::achieved (CollectiveOp::none: point-to-point) and its name.
int achieved_index(CollectiveOp op);
const char* achieved_name(int index);
// The rate a table gives at `bytes` (interpolation as described above).
double achieved_rate(const std::vector<RatePoint>& table, int64_t bytes);

struct Machine {
  std::string name;
  std::string source;  // where the numbers come from, printed with every simulated table
  std::map<DType, ComputeModel> compute;
  GpuModel gpu;
  CopyEngineModel copy_engines;
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

// The wave model's time for one GEMM of `dtype` on `sms` SMs: the fastest tile and split of k,
// never less than its bytes at the GEMM's share of the memory rate (`c` has gemm_tiles; `gpu`
// has SMs). What MachineCost prices such a GEMM at, and what calibrate fits against.
double wave_gemm_seconds(const ComputeModel& c, const GpuModel& gpu, DType dtype, const Task& t,
                         int sms);

// Reads a machine file. InputError naming the file, line, key and the valid choices.
Machine load_machine(const std::string& path);
Machine parse_machine(const std::string& yaml_text, const std::string& source);

// Writes `machine` as a machine file that load_machine reads back, with comments.
void save_machine(std::ostream& out, const Machine& machine);

// How a MachineCost prices transfers: over the link classes (NCCL, the host-staged MPI
// transport) or as copy-engine copies within one node (--transport ce: Machine::copy_engines).
enum class TransferPath { links, copy_engines };

// The transfer path a config's `transport` is priced on: copy_engines for ce, else links.
TransferPath transfer_path(const std::string& transport);
// "links" or "ce".
const char* transfer_path_name(TransferPath path);

// Prices tasks and messages with a Machine for plans of one dtype.
class MachineCost : public CostModel {
 public:
  // InputError if a needed piece is missing (copy_engines, on that path).
  explicit MachineCost(const Machine& machine, TransferPath path = TransferPath::links);
  TransferPath path() const { return path_; }
  // InputError unless `world` ranks can be priced on this path: on copy engines, one node.
  void check_world(int world) const;
  double compute_seconds(const Task& t, DType dtype, int rank) const override;
  double compute_seconds_beside_comm(const Task& t, DType dtype, int rank) const override;
  int latencies_per_step(const Task& collective, int pieces) const override;
  double reduction_seconds_per_byte(CollectiveOp op, DType dtype) const override;
  double compute_seconds_while_reducing(const Task& t, DType dtype, int rank) const override;
  double transfer_seconds(int64_t bytes, int from_rank, int to_rank) const override;
  LinkRate link_rate(CollectiveOp op, int64_t size, int from_rank, int to_rank) const override;
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
  double gemm_seconds(const Task& t, DType dtype, int sms) const;
  LinkRate copy_rate() const {
    return {machine_.copy_engines.copy_s, machine_.copy_engines.bytes_per_s};
  }
  Machine machine_;
  TransferPath path_ = TransferPath::links;
  int intra_ = -1, inter_ = -1;  // indices into machine_.links
  std::map<DType, Table> tables_;
};

}  // namespace fob
