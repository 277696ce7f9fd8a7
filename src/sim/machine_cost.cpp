// MachineCost: prices tasks with a Machine's roofline and efficiency tables and messages with
// its link classes and topology.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fob/machine.h"

namespace fob {
namespace {

double log_dim(int64_t v) {
  return std::log(static_cast<double>(std::max<int64_t>(v, 1)));
}

// Copy engines are priced only with the machine file's copy_engines section.
void check_path(const Machine& m, TransferPath path) {
  if (path != TransferPath::copy_engines || m.copy_engines.count > 0) return;
  throw InputError("machine '" + m.name +
                   "': the machine file has no copy_engines section, which transport ce is "
                   "priced with; add copy_engines: {count, gbytes_per_s, copy_us} "
                   "(include/fob/machine.h) or simulate transport nccl");
}

}  // namespace

TransferPath transfer_path(const std::string& transport) {
  return transport == "ce" ? TransferPath::copy_engines : TransferPath::links;
}

const char* transfer_path_name(TransferPath path) {
  return path == TransferPath::copy_engines ? "ce" : "links";
}

MachineCost::MachineCost(const Machine& machine, TransferPath path)
    : machine_(machine), path_(path) {
  const std::string at = "machine '" + machine_.name + "': ";
  check_path(machine_, path_);
  if (machine_.ranks_per_node < 1) {
    throw InputError(at + "topology.ranks_per_node: " + std::to_string(machine_.ranks_per_node) +
                     " must be >= 1");
  }
  std::string names;
  for (std::size_t i = 0; i < machine_.links.size(); ++i) {
    const LinkClass& l = machine_.links[i];
    if (!(l.bytes_per_s > 0) || !(l.latency_s >= 0)) {
      throw InputError(at + "link '" + l.name + "' needs gbytes_per_s > 0 and latency_us >= 0");
    }
    if (l.name == machine_.intra_node) intra_ = static_cast<int>(i);
    if (l.name == machine_.inter_node) inter_ = static_cast<int>(i);
    names += (names.empty() ? "" : ", ") + l.name;
  }
  if (intra_ < 0 || inter_ < 0) {
    throw InputError(at + "topology: '" + (intra_ < 0 ? machine_.intra_node : machine_.inter_node) +
                     "' is not a link class; valid: " + (names.empty() ? "(none)" : names));
  }
  for (const auto& [dtype, c] : machine_.compute) {
    if (!(c.peak_flops > 0) || !(c.memory_bytes_per_s > 0)) {
      throw InputError(at + "compute." + to_string(dtype) +
                       " needs peak_tflops > 0 and memory_gbytes_per_s > 0");
    }
    Table& t = tables_[dtype];
    for (int d = 0; d < 3; ++d) {
      t.lo[d] = std::numeric_limits<double>::infinity();
      t.hi[d] = -std::numeric_limits<double>::infinity();
    }
    for (const GemmPoint& p : c.gemm_efficiency) {
      if (!(p.efficiency > 0 && p.efficiency <= 1)) {
        throw InputError(at + "compute." + to_string(dtype) + ".gemm_efficiency: " +
                         std::to_string(p.efficiency) + " must be in (0, 1]");
      }
      const std::array<double, 3> x = {log_dim(p.m), log_dim(p.n), log_dim(p.k)};
      for (int d = 0; d < 3; ++d) {
        t.lo[d] = std::min(t.lo[d], x[d]);
        t.hi[d] = std::max(t.hi[d], x[d]);
      }
      t.points.push_back({x[0], x[1], x[2], p.efficiency});
    }
  }
}

void MachineCost::require(DType dtype) const {
  if (machine_.compute.count(dtype)) return;
  std::string have;
  for (const auto& kv : machine_.compute)
    have += (have.empty() ? "" : ", ") + std::string(to_string(kv.first));
  throw InputError("machine '" + machine_.name + "' has no compute model for dtype " +
                   to_string(dtype) + "; it has: " + (have.empty() ? "(none)" : have));
}

// Inverse-distance weighting in (log m, log n, log k) with weights 1 / distance^4 over every
// table point, after clamping the query into the table's bounding box (per dimension). Exact at
// table points, continuous, always between the table's smallest and largest efficiency, and
// constant along a dimension outside the table's range of it. The power 4 (> 3 dimensions)
// keeps the nearest points dominant so that far points do not flatten the curve.
double MachineCost::gemm_efficiency(DType dtype, int64_t m, int64_t n, int64_t k) const {
  require(dtype);
  const Table& t = tables_.at(dtype);
  if (t.points.empty()) return 1.0;
  const double q[3] = {std::clamp(log_dim(m), t.lo[0], t.hi[0]),
                       std::clamp(log_dim(n), t.lo[1], t.hi[1]),
                       std::clamp(log_dim(k), t.lo[2], t.hi[2])};
  double weights = 0, sum = 0;
  for (const auto& p : t.points) {
    double d2 = 0;
    for (int d = 0; d < 3; ++d) d2 += (q[d] - p[d]) * (q[d] - p[d]);
    if (d2 < 1e-18) return p[3];
    const double w = 1.0 / (d2 * d2);
    weights += w;
    sum += w * p[3];
  }
  return sum / weights;
}

// Roofline per batch entry: the slower of the flops (at the wave model's time on `sms` SMs, or
// at the efficiency table's fraction of peak) and the operands' and result's bytes at the
// GEMM's share of the memory bandwidth.
double MachineCost::gemm_seconds(const Task& t, DType dtype, int sms) const {
  const ComputeModel& c = machine_.compute.at(dtype);
  if (!c.gemm_tiles.empty()) return wave_gemm_seconds(c, machine_.gpu, dtype, t, sms);
  const double m = static_cast<double>(t.m), n = static_cast<double>(t.n);
  const double kk = static_cast<double>(t.k);
  const double batch = std::max(t.batch, 1);
  const double bytes = (m * kk + kk * n + m * n) * dtype_bytes(dtype);
  const double flops = t.flops / batch;
  const double eff = gemm_efficiency(dtype, t.m, t.n, t.k);
  return batch * std::max(flops / (c.peak_flops * eff),
                          bytes / (c.memory_bytes_per_s * c.gemm_memory_efficiency));
}

double MachineCost::compute_seconds(const Task& t, DType dtype, int /*rank*/) const {
  require(dtype);
  if (t.kind == TaskKind::gemm) return gemm_seconds(t, dtype, machine_.gpu.sms);
  // Element-wise tasks are memory bound (plan.h's memory_elements).
  return memory_elements(t) * dtype_bytes(dtype) / machine_.compute.at(dtype).memory_bytes_per_s;
}

// A GEMM beside a transfer of an overlapping plan has the SMs NCCL leaves it; copy engines
// take none.
double MachineCost::compute_seconds_beside_comm(const Task& t, DType dtype, int rank) const {
  if (path_ == TransferPath::copy_engines) return compute_seconds(t, dtype, rank);
  return compute_seconds_while_reducing(t, dtype, rank);
}

// The SMs a transfer's kernels (NCCL's, or a ce reduce-scatter's adds) leave a GEMM:
// sms - comm_sms.
double MachineCost::compute_seconds_while_reducing(const Task& t, DType dtype, int rank) const {
  if (t.kind != TaskKind::gemm || machine_.gpu.sms == 0) return compute_seconds(t, dtype, rank);
  require(dtype);
  return gemm_seconds(t, dtype, machine_.gpu.sms - machine_.gpu.comm_sms);
}

void MachineCost::check_world(int world) const {
  if (path_ != TransferPath::copy_engines || world <= machine_.ranks_per_node) return;
  throw InputError("transport ce: world " + std::to_string(world) + " spans " +
                   std::to_string((world + machine_.ranks_per_node - 1) / machine_.ranks_per_node) +
                   " nodes of " + std::to_string(machine_.ranks_per_node) +
                   " ranks (topology.ranks_per_node of machine '" + machine_.name +
                   "'); copy engines reach peers within one node only; valid: world 1.." +
                   std::to_string(machine_.ranks_per_node) + ", or transport nccl");
}

// A copy engine moves an all-to-all's pieces for a peer one copy each (transfer_messages.h: a
// message per span).
int MachineCost::latencies_per_step(const Task& collective, int pieces) const {
  if (path_ != TransferPath::copy_engines || collective.op != CollectiveOp::all_to_all) return 1;
  return std::max(pieces, 1);
}

// On copy engines the receiver adds each partial it receives into its block: an add kernel
// reading two blocks and writing one at the dtype's memory bandwidth (as an add task).
double MachineCost::reduction_seconds_per_byte(CollectiveOp op, DType dtype) const {
  if (path_ != TransferPath::copy_engines || op != CollectiveOp::reduce_scatter) return 0.0;
  require(dtype);
  return 3.0 / machine_.compute.at(dtype).memory_bytes_per_s;
}

const LinkClass& MachineCost::link(int from_rank, int to_rank) const {
  return machine_.links[static_cast<std::size_t>(link_class(from_rank, to_rank))];
}

int MachineCost::link_class(int from_rank, int to_rank) const {
  const bool same_node = from_rank / machine_.ranks_per_node == to_rank / machine_.ranks_per_node;
  return same_node ? intra_ : inter_;
}

int MachineCost::rotation_period(int world) const {
  if (world <= machine_.ranks_per_node) return 1;
  return world % machine_.ranks_per_node == 0 ? machine_.ranks_per_node : world;
}

double MachineCost::transfer_seconds(int64_t bytes, int from_rank, int to_rank) const {
  return latency_seconds(from_rank, to_rank) +
         static_cast<double>(bytes) / bytes_per_second(from_rank, to_rank);
}

double MachineCost::latency_seconds(int from_rank, int to_rank) const {
  if (path_ == TransferPath::copy_engines) return copy_rate().latency_s;
  return link(from_rank, to_rank).latency_s;
}

double MachineCost::bytes_per_second(int from_rank, int to_rank) const {
  if (path_ == TransferPath::copy_engines) return copy_rate().bytes_per_s;
  return link(from_rank, to_rank).bytes_per_s;
}

double MachineCost::compute_slowdown_while_transferring() const {
  return machine_.contention;
}

double MachineCost::transfer_slowdown_while_computing() const {
  return machine_.transfer_contention;
}

double MachineCost::comm_start_delay_while_computing() const {
  return machine_.comm_start_delay_s;
}

double MachineCost::launch_seconds(StreamId stream) const {
  return stream == StreamId::compute ? machine_.launch_compute_s : machine_.launch_comm_s;
}

}  // namespace fob
