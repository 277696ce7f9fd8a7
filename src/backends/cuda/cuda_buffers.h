// A plan's memory on the cuda backend: its device buffers and collective scratch, the pinned
// host mirrors the host-staged transport copies through, its events and its captured graph; and
// where a view of it lies. Element types are mapped in cuda_util.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda_util.h"
#include "fob/plan.h"
#include "gpu_monitor.h"

namespace fob {

// Freed explicitly (release_prepared), never by a destructor: after a fault the backend leaves
// memory that hung kernels may still use to the exiting process.
struct Prepared {
  std::vector<void*> device;
  void* stage = nullptr;  // device scratch for collectives, stage_elements() (device_plan.h)
  // The plan's row maps, uploaded once (row_map_image(), device_plan.h), and where each map's
  // source rows and weights lie in it, in bytes (weight -1: none).
  void* row_maps = nullptr;
  std::vector<int64_t> row_map_src, row_map_weight;
  std::vector<void*> host;  // pinned mirrors, only for --transport mpi
  void* host_scratch[2] = {nullptr, nullptr};
  std::vector<cudaEvent_t> done, start, end;
  cudaGraphExec_t graph = nullptr;
  bool graph_has_events = false;  // the graph records per-task timing events
  int eager_runs = 0;             // iterations run before capturing a graph
  uint64_t nvtx_case = 0;         // the case's NVTX range, from setup() to release()
  // plan_overlaps(), agreed by every rank: its transfers run on the communicator whose CTAs
  // are capped (nccl_transport.h).
  bool overlaps = false;
  // Per task: a GEMM that may run beside a transfer leaves --comm-sms SMs free
  // (tasks_beside_transfers(), device_plan.h).
  std::vector<char> beside_transfer;
  // NCCL's registrations of the buffers, with the communicator they were made on.
  std::vector<void*> registered;
  void* registered_with = nullptr;
  int64_t registered_bytes = 0;
  // CUPTI lost an iteration's records: this plan's iterations record per-task timing events
  // from then on (and a captured graph is captured again with them).
  bool events = false;
  int retried = 0;  // iterations run again because no timer took them
  // The most operations one eager iteration queues on one stream (queued_operations()).
  int queued_ops = 0;
  GpuWindow gpu;  // NVML's samples over its timed iterations
  // How device memory was allocated, so release_prepared() frees it the same way.
  void (*free_device)(void* ctx, void* ptr) = nullptr;
  void* free_ctx = nullptr;
};

// Device memory for a plan: `allocate(ctx, bytes)` and its matching `free_device`.
struct DeviceAllocator {
  void* (*allocate)(void* ctx, size_t bytes) = nullptr;
  void (*free)(void* ctx, void* ptr) = nullptr;
  void* ctx = nullptr;
};

// The plan's device buffers, collective scratch and row maps (never managed memory).
void allocate_device_buffers(const Plan& plan, Prepared& p, const DeviceAllocator& allocator);
// The plan's row maps copied into Prepared::row_maps, where gather tasks read them.
void upload_row_maps(const Plan& plan, Prepared& p, const Checker& check);
// The plan's input regions, generated from `seed` on the device in its dtype (no host copy).
void fill_inputs(const Plan& plan, uint64_t seed, Prepared& p, const Checker& check);
// The plan's input regions overwritten with timing data (timing_element in input_hash.h), on
// the device.
void fill_timing(const Plan& plan, uint64_t seed, Prepared& p, const Checker& check);
// Every device buffer set to NaN, then the inputs written again.
void poison_buffers(const Plan& plan, uint64_t seed, Prepared& p, const Checker& check);
std::vector<double> read_buffer(const Plan& plan, const Prepared& p, int buffer,
                                const Checker& check);
// Frees whatever `p` holds (graph, memory, events) and empties it.
void release_prepared(Prepared& p);

// Buffer addresses of one prepared plan: a view's first element (row and column offset),
// `extra_rows` further down. Host mirrors have the device buffers' layout.
class PlanBuffers {
 public:
  PlanBuffers() = default;
  PlanBuffers(const Plan& plan, Prepared& prepared) : plan_(&plan), prepared_(&prepared) {}

  const Plan& plan() const { return *plan_; }
  Prepared& prepared() const { return *prepared_; }
  int64_t cols(int buffer) const { return plan_->buffers[buffer].cols; }
  int elem() const { return dtype_bytes(plan_->dtype); }
  int64_t count(const View& v) const { return v.rows * cols(v.buffer); }
  void* device_at(const View& v, int64_t extra_rows = 0) const;
  void* host_at(const View& v, int64_t extra_rows = 0) const;

 private:
  int64_t offset_bytes(const View& v, int64_t extra_rows) const;

  const Plan* plan_ = nullptr;
  Prepared* prepared_ = nullptr;
};

}  // namespace fob
