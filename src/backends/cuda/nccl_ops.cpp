// The cuda backend's transfers over NCCL: exchanges as grouped ncclSend/ncclRecv, collectives
// as ncclAllGather/ncclReduceScatter. In loopback (BackendOptions::loopback) the communicator
// has one rank, this process: the collective call covers its own block and every other rank's
// block moves by a send to itself and a receive in the same group, which NCCL allows.
#include "cuda_backend.h"
#include "kernels.h"

namespace fob {

// Device elements a plan's collectives need as contiguous scratch: a slicing chunk's blocks are
// a stride apart in the gathered buffer, while NCCL's collectives want them back to back; a
// loopback reduce-scatter receives each of its own partial sums there before adding it.
int64_t CudaBackend::stage_elements(const Plan& plan) {
  int64_t most = 0;
  for (const Task& t : plan.tasks) {
    if (t.kind != TaskKind::collective) continue;
    const int64_t block = t.c.rows * plan.buffers[t.c.buffer].cols;
    const int64_t stride = t.op == CollectiveOp::all_gather ? t.dst_stride_rows : t.src_stride_rows;
    if (stride != t.c.rows) most = std::max(most, plan.world * block);
    if (plan.input_period > 0 && t.op == CollectiveOp::reduce_scatter) {
      most = std::max(most, block);
    }
  }
  return most;
}

// The halves a task has (sends() and receives()): a side without a peer is never posted.
void CudaBackend::exchange(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(plan_->dtype);
  check_.nccl(ncclGroupStart(), "ncclGroupStart");
  if (t.sends()) {
    check_.nccl(ncclSend(device_at(t.a), count(t.a), type, nccl_peer(t.send_peer), nccl_, stream),
                "ncclSend");
  }
  if (t.receives()) {
    check_.nccl(ncclRecv(device_at(t.c), count(t.c), type, nccl_peer(t.recv_peer), nccl_, stream),
                "ncclRecv");
  }
  check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void CudaBackend::collective(const Task& t, cudaStream_t stream) {
  if (t.op == CollectiveOp::all_gather) return all_gather(t, stream);
  if (t.op == CollectiveOp::reduce_scatter) return reduce_scatter(t, stream);
  check_.fail("task " + std::to_string(t.id) + " '" + t.label + "'",
              std::string("collective ") + to_string(t.op) + " is not supported");
}

// Rank j's block lies at c.row + j * dst_stride_rows; this rank's own is `a`.
void CudaBackend::all_gather(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(plan_->dtype);
  const int64_t block = count(t.c);
  const int64_t stride = t.dst_stride_rows;
  const int rank = plan_->rank, world = plan_->world;
  if (options_.loopback) {
    // The 1-rank all-gather places this rank's block; the others are what every other rank
    // would send, which in loopback is this rank's own block (the shards are equal).
    check_.nccl(
        ncclAllGather(device_at(t.a), device_at(t.c, rank * stride), block, type, nccl_, stream),
        "ncclAllGather");
    check_.nccl(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < world; ++j) {
      if (j == rank) continue;
      check_.nccl(ncclSend(device_at(t.a), block, type, 0, nccl_, stream), "ncclSend");
      check_.nccl(ncclRecv(device_at(t.c, j * stride), block, type, 0, nccl_, stream), "ncclRecv");
    }
    check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
    return;
  }
  if (stride == t.c.rows) {
    // Contiguous blocks in rank order: NCCL's in-place all-gather.
    check_.nccl(ncclAllGather(device_at(t.a), device_at(t.c), block, type, nccl_, stream),
                "ncclAllGather");
    return;
  }
  // A slicing chunk: the blocks are a stride apart. NCCL's all-gather (its ring) into
  // contiguous scratch, then one strided copy puts every block in place.
  const size_t width = static_cast<size_t>(block) * elem();
  check_.nccl(ncclAllGather(device_at(t.a), current_->stage, block, type, nccl_, stream),
              "ncclAllGather");
  copy_blocks(device_at(t.c), static_cast<size_t>(stride * cols(t.c.buffer)) * elem(),
              current_->stage, width, width, world, stream, "placing gathered blocks");
}

// Rank j's contribution to block j... lies at a.row + j * src_stride_rows; the sum of this
// rank's block over all ranks goes to `c`.
void CudaBackend::reduce_scatter(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(plan_->dtype);
  const int64_t block = count(t.c);
  const int64_t stride = t.src_stride_rows;
  const int rank = plan_->rank, world = plan_->world;
  if (options_.loopback) {
    // Every rank's contribution to this rank's block equals this rank's own (equal shards):
    // the 1-rank reduce-scatter copies it, and each other rank's part arrives by a send to
    // itself and is added, as a ring step adds a received partial sum.
    if (!current_->stage) {
      check_.fail("task " + std::to_string(t.id) + " '" + t.label + "'",
                  "loopback needs a plan made for it (CaseSpec::loopback)");
    }
    void* own = device_at(t.a, rank * stride);
    check_.nccl(ncclReduceScatter(own, device_at(t.c), block, type, ncclSum, nccl_, stream),
                "ncclReduceScatter");
    for (int j = 1; j < world; ++j) {
      check_.nccl(ncclGroupStart(), "ncclGroupStart");
      check_.nccl(ncclSend(own, block, type, 0, nccl_, stream), "ncclSend");
      check_.nccl(ncclRecv(current_->stage, block, type, 0, nccl_, stream), "ncclRecv");
      check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
      check_.cuda(cuda::add(plan_->dtype, device_at(t.c), current_->stage, block, stream),
                  "adding a received partial sum");
    }
    return;
  }
  void* input = device_at(t.a);
  if (stride != t.c.rows) {
    // A slicing chunk: gather the strided blocks back to back for NCCL.
    const size_t width = static_cast<size_t>(block) * elem();
    copy_blocks(current_->stage, width, device_at(t.a),
                static_cast<size_t>(stride * cols(t.a.buffer)) * elem(), width, world, stream,
                "packing blocks to reduce");
    input = current_->stage;
  }
  check_.nccl(ncclReduceScatter(input, device_at(t.c), block, type, ncclSum, nccl_, stream),
              "ncclReduceScatter");
}

void CudaBackend::copy_blocks(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                              size_t width, int count, cudaStream_t stream, const char* what) {
  if (dst_pitch <= mem_pitch_ && src_pitch <= mem_pitch_) {
    check_.cuda(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, static_cast<size_t>(count),
                                  cudaMemcpyDeviceToDevice, stream),
                what);
    return;
  }
  // A pitch past the device's limit (blocks over 2 GiB apart): one copy per block.
  for (int i = 0; i < count; ++i) {
    check_.cuda(cudaMemcpyAsync(static_cast<char*>(dst) + i * dst_pitch,
                                static_cast<const char*>(src) + i * src_pitch, width,
                                cudaMemcpyDeviceToDevice, stream),
                what);
  }
}

}  // namespace fob
