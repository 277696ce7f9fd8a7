#include "nccl_transport.h"

#include <cstdlib>

#include "kernels.h"

namespace fob {

NcclTransport::NcclTransport(MPI_Comm comm, int rank, int world, int comm_sms, bool loopback,
                             size_t mem_pitch, const Checker& check)
    : check_(check), loopback_(loopback), mem_pitch_(mem_pitch) {
  // Rank 0's result travels with the id, so a failure there cannot leave the others waiting.
  ncclUniqueId id;
  int status = rank == 0 ? static_cast<int>(ncclGetUniqueId(&id)) : 0;
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  check_.nccl(static_cast<ncclResult_t>(status), "ncclGetUniqueId on rank 0");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (comm_sms > 0 && !std::getenv("NCCL_MAX_CTAS")) config.maxCTAs = comm_sms;
  check_.nccl(ncclCommInitRankConfig(&nccl_, world, id, rank, &config), "ncclCommInitRankConfig");
}

NcclTransport::~NcclTransport() {
  if (nccl_) ncclCommDestroy(nccl_);
}

void NcclTransport::enqueue(const Task& t, cudaStream_t stream) {
  if (t.kind == TaskKind::collective) {
    collective(t, stream);
  } else {
    exchange(t, stream);
  }
}

std::optional<Transport::AsyncError> NcclTransport::async_error() {
  if (!nccl_) return std::nullopt;
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(nccl_, &async);
  if (async == ncclSuccess) return std::nullopt;
  return AsyncError{"NCCL error while", ncclGetErrorString(async)};
}

// Aborting the communicator is what unblocks NCCL kernels waiting for a peer that will never
// come; a hung rank then exits instead of holding its GPU.
void NcclTransport::abort() {
  if (nccl_) {
    ncclCommAbort(nccl_);
    nccl_ = nullptr;
  }
}

// The halves a task has (sends() and receives()): a side without a peer is never posted.
void NcclTransport::exchange(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(at_.plan().dtype);
  check_.nccl(ncclGroupStart(), "ncclGroupStart");
  if (t.sends()) {
    check_.nccl(
        ncclSend(at_.device_at(t.a), at_.count(t.a), type, nccl_peer(t.send_peer), nccl_, stream),
        "ncclSend");
  }
  if (t.receives()) {
    check_.nccl(
        ncclRecv(at_.device_at(t.c), at_.count(t.c), type, nccl_peer(t.recv_peer), nccl_, stream),
        "ncclRecv");
  }
  check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void NcclTransport::collective(const Task& t, cudaStream_t stream) {
  if (t.op == CollectiveOp::all_gather) return all_gather(t, stream);
  if (t.op == CollectiveOp::reduce_scatter) return reduce_scatter(t, stream);
  if (t.op == CollectiveOp::all_to_all) return all_to_all(t, stream);
  check_.fail("task " + std::to_string(t.id) + " '" + t.label + "'",
              std::string("collective ") + to_string(t.op) + " is not supported");
}

// Rank j's block lies at c.row + j * dst_stride_rows; this rank's own is `a`.
void NcclTransport::all_gather(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(at_.plan().dtype);
  const int64_t block = at_.count(t.c);
  const int64_t stride = t.dst_stride_rows;
  const int rank = at_.plan().rank, world = at_.plan().world;
  void* stage = at_.prepared().stage;
  if (loopback_) {
    // The 1-rank all-gather places this rank's block; the others are what every other rank
    // would send, which in loopback is this rank's own block (the shards are equal).
    check_.nccl(ncclAllGather(at_.device_at(t.a), at_.device_at(t.c, rank * stride), block, type,
                              nccl_, stream),
                "ncclAllGather");
    check_.nccl(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < world; ++j) {
      if (j == rank) continue;
      check_.nccl(ncclSend(at_.device_at(t.a), block, type, 0, nccl_, stream), "ncclSend");
      check_.nccl(ncclRecv(at_.device_at(t.c, j * stride), block, type, 0, nccl_, stream),
                  "ncclRecv");
    }
    check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
    return;
  }
  if (stride == t.c.rows) {
    // Contiguous blocks in rank order: NCCL's in-place all-gather.
    check_.nccl(ncclAllGather(at_.device_at(t.a), at_.device_at(t.c), block, type, nccl_, stream),
                "ncclAllGather");
    return;
  }
  // A slicing chunk: the blocks are a stride apart. NCCL's all-gather (its ring) into
  // contiguous scratch, then one strided copy puts every block in place.
  const size_t width = static_cast<size_t>(block) * at_.elem();
  check_.nccl(ncclAllGather(at_.device_at(t.a), stage, block, type, nccl_, stream),
              "ncclAllGather");
  copy_blocks(at_.device_at(t.c), static_cast<size_t>(stride * at_.cols(t.c.buffer)) * at_.elem(),
              stage, width, width, world, stream, "placing gathered blocks");
}

// Rank j's contribution to block j... lies at a.row + j * src_stride_rows; the sum of this
// rank's block over all ranks goes to `c`.
void NcclTransport::reduce_scatter(const Task& t, cudaStream_t stream) {
  const DType dtype = at_.plan().dtype;
  const ncclDataType_t type = nccl_type(dtype);
  const int64_t block = at_.count(t.c);
  const int64_t stride = t.src_stride_rows;
  const int rank = at_.plan().rank, world = at_.plan().world;
  void* stage = at_.prepared().stage;
  if (loopback_) {
    // Every rank's contribution to this rank's block equals this rank's own (equal shards):
    // the 1-rank reduce-scatter copies it, and each other rank's part arrives by a send to
    // itself and is added, as a ring step adds a received partial sum.
    if (!stage) {
      check_.fail("task " + std::to_string(t.id) + " '" + t.label + "'",
                  "loopback needs a plan made for it (CaseSpec::loopback)");
    }
    void* own = at_.device_at(t.a, rank * stride);
    check_.nccl(ncclReduceScatter(own, at_.device_at(t.c), block, type, ncclSum, nccl_, stream),
                "ncclReduceScatter");
    for (int j = 1; j < world; ++j) {
      check_.nccl(ncclGroupStart(), "ncclGroupStart");
      check_.nccl(ncclSend(own, block, type, 0, nccl_, stream), "ncclSend");
      check_.nccl(ncclRecv(stage, block, type, 0, nccl_, stream), "ncclRecv");
      check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
      check_.cuda(cuda::add(dtype, at_.device_at(t.c), stage, block, stream),
                  "adding a received partial sum");
    }
    return;
  }
  void* input = at_.device_at(t.a);
  if (stride != t.c.rows) {
    // A slicing chunk: gather the strided blocks back to back for NCCL.
    const size_t width = static_cast<size_t>(block) * at_.elem();
    copy_blocks(stage, width, at_.device_at(t.a),
                static_cast<size_t>(stride * at_.cols(t.a.buffer)) * at_.elem(), width, world,
                stream, "packing blocks to reduce");
    input = stage;
  }
  check_.nccl(ncclReduceScatter(input, at_.device_at(t.c), block, type, ncclSum, nccl_, stream),
              "ncclReduceScatter");
}

// The block for rank j lies at a.row + j * src_stride_rows and rank j's block lands at
// c.row + j * dst_stride_rows. Every block is whole rows, so contiguous: one send and one
// receive per rank, this one included (NCCL copies those locally), in one group, so that NCCL
// runs them together rather than rank after rank. ncclAlltoAll (NCCL 2.28) takes only blocks
// back to back, which a chunk's are not; packing them around it would add two passes.
//
// Loopback: the N pairs all go to this process, where a group matches sends and receives to
// one peer in the order they were posted, so block j arrives in block j's place. The inputs
// repeat (CaseSpec::loopback), so every block of a rank is alike and block j is what rank j
// would have sent; sending each block from its own place keeps every offset exercised, as
// the host path's pairwise all-to-all does.
void NcclTransport::all_to_all(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(at_.plan().dtype);
  const int world = at_.plan().world;
  check_.nccl(ncclGroupStart(), "ncclGroupStart");
  // A block of several chunks (one per sequence) is one send and one receive per chunk, all
  // in the group: NCCL matches a peer's sends and receives in the order they were posted.
  for (int j = 0; j < world; ++j) {
    for (int i = 0; i < t.batch; ++i) {
      check_.nccl(ncclSend(at_.device_at(t.a, j * t.src_stride_rows + i * t.a_step.rows),
                           at_.count(t.a), type, nccl_peer(j), nccl_, stream),
                  "ncclSend");
      check_.nccl(ncclRecv(at_.device_at(t.c, j * t.dst_stride_rows + i * t.c_step.rows),
                           at_.count(t.c), type, nccl_peer(j), nccl_, stream),
                  "ncclRecv");
    }
  }
  check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void NcclTransport::copy_blocks(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                                size_t width, int count, cudaStream_t stream, const char* what) {
  fob::copy_blocks(check_, mem_pitch_,
                   {dst, dst_pitch, src, src_pitch, width, static_cast<size_t>(count)},
                   cudaMemcpyDeviceToDevice, stream, what);
}

}  // namespace fob
