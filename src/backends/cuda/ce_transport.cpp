#include "ce_transport.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fob/device_plan.h"
#include "kernels.h"

namespace fob {

namespace {

constexpr uint32_t kAbortMargin = 1u << 30;  // past every number a wait can be waiting for

// Every rank's node, as the first world rank of the ranks that share its memory: CUDA IPC maps
// memory of GPUs in one operating system, which MPI_COMM_TYPE_SHARED groups.
std::vector<int> node_of_each_rank(MPI_Comm comm, int rank, int world) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int first = rank;
  MPI_Allreduce(&rank, &first, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  std::vector<int> nodes(static_cast<size_t>(world));
  MPI_Allgather(&first, 1, MPI_INT, nodes.data(), 1, MPI_INT, comm);
  return nodes;
}

std::vector<cudaIpcMemHandle_t> allgather_handles(MPI_Comm comm, const cudaIpcMemHandle_t* mine,
                                                  int count, int world) {
  std::vector<cudaIpcMemHandle_t> all(static_cast<size_t>(count) * world);
  const int bytes = count * static_cast<int>(sizeof(cudaIpcMemHandle_t));
  MPI_Allgather(mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, comm);
  return all;
}

}  // namespace

void ce_refuse_several_nodes(MPI_Comm comm, int rank, int world) {
  if (const std::string why = ranks_across_nodes(node_of_each_rank(comm, rank, world));
      !why.empty()) {
    throw InputError(
        "transport: 'ce' maps peers' GPU memory with CUDA IPC, which reaches the "
        "GPUs of one node only, and " +
        why + "; use --transport nccl (or mpi) across nodes");
  }
}

CeTransport::CeTransport(MPI_Comm comm, int rank, int world, int device, const Checker& check)
    : comm_(comm), rank_(rank), world_(world), device_(device), check_(check) {
  // The runtime is linked statically and does not expose stream memory operations: they are
  // the driver's (cuda.h, "Stream Memory Operations"), which the process has loaded already.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) {
    write_ = reinterpret_cast<WriteFn>(dlsym(driver, "cuStreamWriteValue32_v2"));
    wait_ = reinterpret_cast<WaitFn>(dlsym(driver, "cuStreamWaitValue32_v2"));
  }
  int unified = 0;
  check_.cuda(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device),
              "cudaDeviceGetAttribute (unified addressing)");
  // Every rank learns every rank's verdict, so that all refuse together.
  int usable = write_ && wait_ && unified ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, comm);
  if (!usable) {
    throw InputError(
        "transport: 'ce' needs the CUDA driver's stream memory operations "
        "(cuStreamWriteValue32_v2, cuStreamWaitValue32_v2) and unified addressing on every "
        "rank, and a rank lacks them; use --transport nccl");
  }
  check_.cuda(cudaDeviceGetAttribute(&copy_engines_, cudaDevAttrAsyncEngineCount, device),
              "cudaDeviceGetAttribute (copy engines)");
  check_.cuda(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device),
              "cudaDeviceGetAttribute (SMs)");
  sent_.assign(static_cast<size_t>(world), 0);
  received_.assign(static_cast<size_t>(world), 0);
  map_flags();
}

// The flags live as long as the transport, so that their numbers only ever grow.
void CeTransport::map_flags() {
  const size_t bytes = std::max<size_t>(2 * static_cast<size_t>(world_) * sizeof(uint32_t), 256);
  check_.cuda(cudaMalloc(&flags_, bytes), "allocating transport ce's flags");
  check_.cuda(cudaMemset(flags_, 0, bytes), "zeroing transport ce's flags");
  check_.cuda(cudaDeviceSynchronize(), "zeroing transport ce's flags");
  cudaIpcMemHandle_t mine;
  check_.cuda(cudaIpcGetMemHandle(&mine, flags_), "cudaIpcGetMemHandle (the flags)");
  const std::vector<cudaIpcMemHandle_t> all = allgather_handles(comm_, &mine, 1, world_);
  peer_flags_.assign(static_cast<size_t>(world_), nullptr);
  for (int peer = 0; peer < world_; ++peer) {
    if (peer == rank_) continue;
    check_.cuda(cudaIpcOpenMemHandle(&peer_flags_[peer], all[peer], cudaIpcMemLazyEnablePeerAccess),
                "cudaIpcOpenMemHandle (a peer's flags)");
  }
  // No rank writes into a peer's flags before the peer has zeroed them.
  MPI_Barrier(comm_);
}

// Every importer closes before any exporter frees ("Calling cudaFree on an exported memory
// region before calling cudaIpcCloseMemHandle in the importing context will result in undefined
// behavior", cudaIpcOpenMemHandle). After an abort the peers may be gone: the memory goes with
// the process.
CeTransport::~CeTransport() {
  if (aborted_) return;
  cudaDeviceSynchronize();
  for (void* peer : peer_flags_) {
    if (peer) cudaIpcCloseMemHandle(peer);
  }
  MPI_Barrier(comm_);
  cudaFree(flags_);
}

void* CeTransport::allocate(size_t bytes) {
  void* ptr = nullptr;
  check_.cuda(cudaMalloc(&ptr, bytes), "cudaMalloc for a plan buffer");
  return ptr;
}

void CeTransport::free(void* ptr) {
  if (ptr) cudaFree(ptr);
}

int64_t CeTransport::extra_bytes(const Plan& plan) const {
  int64_t stage = 0;
  receive_slots(plan, &stage);
  return stage;
}

// Collective, in the same case order on every rank (the executor's setup()).
void CeTransport::prepare(const Plan& plan, Prepared& p) {
  Case& c = cases_[&p];
  int64_t stage_bytes = 0;
  const std::vector<std::vector<Slot>> mine = receive_slots(plan, &stage_bytes);
  if (stage_bytes > 0) {
    check_.cuda(cudaMalloc(&c.stage, static_cast<size_t>(stage_bytes)),
                "allocating transport ce's stage for partial sums");
  }
  map_peer_regions(export_regions(plan, p, c), c);
  build_ops(plan, p, mine, exchange_slots(mine), c);
  MPI_Barrier(comm_);  // every peer has mapped this case's memory before anyone copies into it
}

std::vector<void*> CeTransport::export_regions(const Plan& plan, const Prepared& p, Case& c) {
  std::vector<void*> regions(p.device.begin(), p.device.end());
  regions.push_back(c.stage);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    c.mapped_bytes +=
        std::max<int64_t>(plan.buffers[i].rows * plan.buffers[i].cols, 1) * dtype_bytes(plan.dtype);
  }
  return regions;
}

// Every peer's regions, mapped once per case; a peer's empty stage maps to nothing.
void CeTransport::map_peer_regions(const std::vector<void*>& mine, Case& c) {
  const int count = static_cast<int>(mine.size());
  int counts[2] = {count, -count};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT, MPI_MAX, comm_);
  if (counts[0] != -counts[1]) {
    check_.fail("transport ce", "the ranks' plans have different numbers of buffers");
  }
  std::vector<cudaIpcMemHandle_t> handles(mine.size());
  std::vector<char> present(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    std::memset(&handles[i], 0, sizeof handles[i]);
    present[i] = mine[i] != nullptr;
    if (mine[i]) check_.cuda(cudaIpcGetMemHandle(&handles[i], mine[i]), "cudaIpcGetMemHandle");
  }
  const std::vector<cudaIpcMemHandle_t> all =
      allgather_handles(comm_, handles.data(), count, world_);
  std::vector<char> all_present(mine.size() * world_);
  MPI_Allgather(present.data(), count, MPI_CHAR, all_present.data(), count, MPI_CHAR, comm_);
  c.peer_regions.assign(static_cast<size_t>(world_), std::vector<void*>(mine.size(), nullptr));
  for (int peer = 0; peer < world_; ++peer) {
    if (peer == rank_) continue;
    for (int i = 0; i < count; ++i) {
      if (!all_present[peer * count + i]) continue;
      check_.cuda(cudaIpcOpenMemHandle(&c.peer_regions[peer][i], all[peer * count + i],
                                       cudaIpcMemLazyEnablePeerAccess),
                  "cudaIpcOpenMemHandle (a peer's plan buffer)");
    }
  }
}

void CeTransport::close_peer_regions(Case& c) {
  for (std::vector<void*>& regions : c.peer_regions) {
    for (void*& region : regions) {
      if (region) check_.cuda(cudaIpcCloseMemHandle(region), "cudaIpcCloseMemHandle");
      region = nullptr;
    }
  }
}

// Collective: the backend has synchronised the device, so no copy into a peer is in flight;
// the barrier keeps every peer's buffers alive until this rank has closed them.
void CeTransport::unprepare(Prepared& p) {
  auto it = cases_.find(&p);
  if (it == cases_.end()) return;
  if (!aborted_) {
    close_peer_regions(it->second);
    MPI_Barrier(comm_);
    if (it->second.stage) cudaFree(it->second.stage);
  }
  if (current_ == &it->second) current_ = nullptr;
  cases_.erase(it);
}

void CeTransport::begin(const PlanBuffers& buffers) {
  const auto it = cases_.find(&buffers.prepared());
  if (it == cases_.end()) check_.fail("transport ce", "a plan began that was never prepared");
  current_ = &it->second;
  dtype_ = buffers.plan().dtype;
}

void CeTransport::enqueue(const Task& t, cudaStream_t stream) {
  std::vector<uint32_t> numbers;  // the receives' numbers, for their arrival waits
  size_t next = 0;
  for (const Op& op : current_->ops.at(static_cast<size_t>(t.id))) {
    queue_op(op, stream, numbers, next);
  }
}

CUdeviceptr CeTransport::own_word(int index) const {
  return reinterpret_cast<CUdeviceptr>(flags_) + static_cast<CUdeviceptr>(index) * 4;
}

CUdeviceptr CeTransport::peer_word(int peer, int index) const {
  return reinterpret_cast<CUdeviceptr>(peer_flags_[peer]) + static_cast<CUdeviceptr>(index) * 4;
}

// The default flags: the write is fenced behind the stream's earlier work (the copy it announces).
void CeTransport::write_flag(cudaStream_t stream, CUdeviceptr word, uint32_t value,
                             const char* what) {
  const CUresult r = write_(reinterpret_cast<CUstream>(stream), word, value, 0);
  if (r != CUDA_SUCCESS)
    check_.fail(what, "cuStreamWriteValue32 failed: CUresult " + std::to_string(r));
}

void CeTransport::wait_flag(cudaStream_t stream, CUdeviceptr word, uint32_t value,
                            const char* what) {
  const CUresult r =
      wait_(reinterpret_cast<CUstream>(stream), word, value, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS)
    check_.fail(what, "cuStreamWaitValue32 failed: CUresult " + std::to_string(r));
}

std::vector<std::string> CeTransport::case_facts(const Prepared& p) const {
  const auto it = cases_.find(&p);
  if (it == cases_.end()) return {};
  const Case& c = it->second;
  const std::string reduction = c.adds == 0 ? "none"
                                            : "receiver-side cuda::add on the comm stream, " +
                                                  std::to_string(c.add_blocks) + " blocks, " +
                                                  std::to_string(c.adds) + " adds per iteration";
  return {"ce_copies=" + std::to_string(c.copies) + " peer copies per iteration (cudaMemcpyAsync)",
          "ce_mapped=" + std::to_string(world_ - 1) + " peers' plan buffers, " +
              std::to_string(c.mapped_bytes) + " bytes each (cudaIpcOpenMemHandle)",
          "ce_reduction=" + reduction, "ce_sms=" + std::to_string(transfer_sms(p))};
}

std::vector<std::string> CeTransport::run_facts() const {
  return {"ce_copy_engines=" + std::to_string(copy_engines_) + " (cudaDevAttrAsyncEngineCount)",
          "ce_signalling=cuStreamWriteValue32_v2/cuStreamWaitValue32_v2 on IPC-mapped flags (no "
          "kernels)"};
}

std::string CeTransport::kernel_timing_refused() const {
  return "transport ce's copies and flag operations are not kernels";
}

// The SMs the transfers take: none for copies; the add kernel's blocks where partial sums are
// added, as many SMs as it has blocks at most.
int CeTransport::transfer_sms(const Prepared& p) const {
  const auto it = cases_.find(&p);
  if (it == cases_.end() || it->second.adds == 0) return 0;
  return std::min(it->second.add_blocks, sm_count_);
}

// Device waits cannot be cancelled: this rank's own flags are set past every number a wait of
// its may expect, so that its streams drain; the peers do the same on their own timeouts.
void CeTransport::abort() {
  aborted_ = true;
  if (!flags_) return;
  std::vector<uint32_t> release(2 * static_cast<size_t>(world_));
  for (int peer = 0; peer < world_; ++peer) {
    release[peer] = sent_[peer] + kAbortMargin;
    release[world_ + peer] = received_[peer] + kAbortMargin;
  }
  cudaStream_t side = nullptr;
  if (cudaStreamCreateWithPriority(&side, cudaStreamNonBlocking, 0) != cudaSuccess) return;
  cudaMemcpyAsync(flags_, release.data(), release.size() * sizeof(uint32_t), cudaMemcpyHostToDevice,
                  side);
  cudaStreamSynchronize(side);
  cudaStreamDestroy(side);
}

}  // namespace fob
