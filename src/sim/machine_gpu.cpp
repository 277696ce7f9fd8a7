// The GPU side of MachineCost (include/fob/machine.h): the wave model of GEMMs and the rates
// NCCL achieved, by size.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fob/machine.h"

namespace fob {
namespace {

constexpr const char* kAchievedNames[kAchievedOps] = {"send_recv", "all_gather", "reduce_scatter",
                                                      "all_to_all"};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

int achieved_index(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_gather:
      return 1;
    case CollectiveOp::reduce_scatter:
      return 2;
    case CollectiveOp::all_to_all:
      return 3;
    case CollectiveOp::none:
      break;
  }
  return 0;
}

const char* achieved_name(int index) {
  return kAchievedNames[index];
}

// Linear in (log size, log rate) between the table's points; below the first size the time of
// the first size (a latency-bound transfer takes as long at any smaller size), above the last
// the last rate.
double achieved_rate(const std::vector<RatePoint>& table, int64_t bytes) {
  const double b = static_cast<double>(std::max<int64_t>(bytes, 1));
  const RatePoint& first = table.front();
  if (b <= static_cast<double>(first.bytes)) {
    return first.bytes_per_s * b / static_cast<double>(first.bytes);
  }
  for (size_t i = 1; i < table.size(); ++i) {
    const RatePoint& hi = table[i];
    if (b > static_cast<double>(hi.bytes)) continue;
    if (b == static_cast<double>(hi.bytes)) return hi.bytes_per_s;
    const RatePoint& lo = table[i - 1];
    const double x = std::log(b / static_cast<double>(lo.bytes)) /
                     std::log(static_cast<double>(hi.bytes) / static_cast<double>(lo.bytes));
    return std::exp(std::log(lo.bytes_per_s) + x * std::log(hi.bytes_per_s / lo.bytes_per_s));
  }
  return table.back().bytes_per_s;
}

namespace {

// The fastest tile and split of k on `sms` SMs (machine.h, "The wave model").
double tile_seconds(const ComputeModel& c, const GpuModel& gpu, const Task& t, int sms) {
  const double sm_flops = c.peak_flops / gpu.sms;
  const int64_t batch = std::max(t.batch, 1);
  const int64_t available = std::max(sms, 1);
  double best = std::numeric_limits<double>::infinity();
  for (const GemmTile& tile : c.gemm_tiles) {
    const int64_t tiles = ceil_div(t.m, tile.m) * ceil_div(t.n, tile.n) * batch;
    for (int64_t split = 1; split <= gpu.max_split_k; split *= 2) {
      if (split > 1 && (tiles * split > available || split > t.k)) break;
      const int64_t waves = ceil_div(tiles * split, available);
      const double k = static_cast<double>(ceil_div(t.k, split)) + c.gemm_k_overhead;
      double seconds = static_cast<double>(waves) * 2.0 * static_cast<double>(tile.m) *
                       static_cast<double>(tile.n) * k / (sm_flops * tile.efficiency);
      if (split > 1) {
        // Each split writes its fp32 m x n part and a reduction reads them all back.
        const double parts = 2.0 * static_cast<double>(split) * static_cast<double>(t.m) *
                             static_cast<double>(t.n) * static_cast<double>(batch) * 4.0;
        seconds += parts / c.memory_bytes_per_s;
      }
      best = std::min(best, seconds);
    }
  }
  return best;
}

}  // namespace

double wave_gemm_seconds(const ComputeModel& c, const GpuModel& gpu, DType dtype, const Task& t,
                         int sms) {
  const double m = static_cast<double>(t.m), n = static_cast<double>(t.n);
  const double k = static_cast<double>(t.k);
  const double bytes = (m * k + k * n + m * n) * dtype_bytes(dtype) * std::max(t.batch, 1);
  return std::max(tile_seconds(c, gpu, t, sms),
                  bytes / (c.memory_bytes_per_s * c.gemm_memory_efficiency));
}

// Copy engines move every transfer at their own rate: NCCL's achieved tables do not apply.
LinkRate MachineCost::link_rate(CollectiveOp op, int64_t size, int from_rank, int to_rank) const {
  if (path_ == TransferPath::copy_engines) return copy_rate();
  const LinkClass& l = link(from_rank, to_rank);
  const std::vector<RatePoint>& table = l.achieved[static_cast<size_t>(achieved_index(op))];
  if (table.empty()) return {l.latency_s, l.bytes_per_s};
  return {0.0, achieved_rate(table, size)};
}

}  // namespace fob
