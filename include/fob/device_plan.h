// Decisions the cuda backend takes from plain data, kept apart so that they are testable
// without a GPU: which device a rank uses, whether two ranks share one, how much memory a plan
// needs, and whether a plan can be captured as a CUDA graph.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fob/plan.h"

namespace fob {

// The device for a rank: FOB_DEVICE when set (`override_text`, validated against the count),
// else the local rank modulo the visible devices, which serves both "every rank sees every GPU"
// (mpirun) and "one visible GPU per task" (srun --gpus-per-task=1). Throws InputError.
int select_device(int local_rank, int device_count, const char* override_text);

// Given each rank's "host/PCI bus id", the first two ranks that share a device, or {-1, -1}.
std::pair<int, int> ranks_sharing_a_device(const std::vector<std::string>& host_bus_ids);

// Where ranks run on several nodes (`node_of_rank`: per rank, any id its node's ranks share),
// which ranks are where, in words ("ranks 0-1 are on one node and 2-3 on another"); "" when
// they all share one.
std::string ranks_across_nodes(const std::vector<int>& node_of_rank);

// Device bytes a plan needs: its buffers, its row maps (row_map_image) and the cuBLAS
// workspace.
int64_t device_bytes_needed(const Plan& plan, int64_t workspace_bytes);

// A plan's row maps (Plan::row_maps) as the cuda backend uploads them, once per plan, into one
// allocation: every map's source rows (int64), then every weighted map's weights (double).
// src[m] and weight[m]: where map m's lie in `bytes`, an offset in bytes (weight -1: none, every
// weight 1). Empty where the plan has no row map.
struct RowMapImage {
  std::vector<unsigned char> bytes;
  std::vector<int64_t> src, weight;
};
RowMapImage row_map_image(const Plan& plan);
int64_t row_map_bytes(const Plan& plan);

// Device elements of scratch the plan's collectives need on NCCL (one buffer, shared): a
// reduce-scatter whose blocks lie a stride apart where NCCL wants them back to back, and a
// loopback reduce-scatter, which receives its own partial sums there. An all-gather needs none:
// blocks a stride apart move point-to-point into place; nor does an all-to-all, which sends
// and receives every block where it lies.
int64_t stage_elements(const Plan& plan);

// Whether one iteration of the plan can be captured as a CUDA graph; `why` says why not.
// Host-staged transfers (transport mpi) run on a host thread and cannot be captured.
bool graph_capture_eligible(const Plan& plan, const std::string& transport, std::string* why);

// Whether some compute task and some comm task of the plan may run at the same time: neither
// reaches the other through the plan's dependencies and each stream's order. compute_only,
// comm_only and baseline (but mlp_bwd's, which gathers X again while dX computes, as Megatron
// does) never overlap; the overlapping strategies do. The cuda backend leaves SMs to NCCL only
// for such plans (--comm-sms), so a serial baseline keeps every SM for its GEMMs.
bool plan_overlaps(const Plan& plan);

// Per task id: whether a compute task may run while some transfer of the plan does (1), as
// plan_overlaps() decides for the plan as a whole; 0 for comm tasks. The cuda backend gives
// cuBLAS an SM target that leaves --comm-sms SMs free to exactly these GEMMs: the others, with
// no transfer in flight, keep every SM.
std::vector<char> tasks_beside_transfers(const Plan& plan);

}  // namespace fob
