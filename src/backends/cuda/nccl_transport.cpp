#include "nccl_transport.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fob/transfer_messages.h"
#include "kernels.h"

namespace fob {

namespace {

NcclLogCapture& nccl_log(int rank) {
  // NCCL reads its log settings once per process, at the first call that logs: one capture
  // serves every backend the process makes, and outlives them.
  static NcclLogCapture capture(rank);
  return capture;
}

std::string peers_text(const std::map<int, std::vector<std::string>>& peers) {
  std::string out;
  for (const auto& [peer, transports] : peers) {
    out += (out.empty() ? "" : "; ") + std::to_string(peer) + ":";
    for (size_t i = 0; i < transports.size(); ++i) out += (i ? "," : " ") + transports[i];
  }
  return out;
}

}  // namespace

NcclTransport::NcclTransport(MPI_Comm comm, int rank, int world, int comm_sms, bool loopback,
                             size_t mem_pitch, const Checker& check)
    : check_(check), rank_(rank), loopback_(loopback), mem_pitch_(mem_pitch) {
  NcclLogCapture& log = nccl_log(rank);
  // Rank 0's result travels with the id, so a failure there cannot leave the others waiting.
  ncclUniqueId id;
  int status = rank == 0 ? static_cast<int>(ncclGetUniqueId(&id)) : 0;
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  check_.nccl(static_cast<ncclResult_t>(status), "ncclGetUniqueId on rank 0");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  check_.nccl(ncclCommInitRankConfig(&reference_.comm, world, id, rank, &config),
              "ncclCommInitRankConfig");
  reference_.facts = parse_nccl_init(log.take());
  const char* env_cap = std::getenv("NCCL_MAX_CTAS");
  reference_.cap =
      env_cap && *env_cap ? std::string("NCCL_MAX_CTAS=") + env_cap : "NCCL's default CTA limit";
  if (comm_sms > 0 && !(env_cap && *env_cap)) {
    // A duplicate (every rank colour 0, key its rank) with its own config: maxCTAs only, every
    // other field NCCL's default, no resources shared with the reference communicator.
    ncclConfig_t capped = NCCL_CONFIG_INITIALIZER;
    capped.maxCTAs = comm_sms;
    capped.splitShare = 0;
    check_.nccl(ncclCommSplit(reference_.comm, 0, rank, &capped_.comm, &capped),
                "ncclCommSplit (the communicator of overlapping plans)");
    capped_.facts = parse_nccl_init(log.take());
    capped_.cap = "maxCTAs " + std::to_string(comm_sms) + " (--comm-sms)";
    split_ = true;
    comm_sms_ = comm_sms;
  }
}

NcclTransport::~NcclTransport() {
  if (split_ && capped_.comm) ncclCommDestroy(capped_.comm);
  if (reference_.comm) ncclCommDestroy(reference_.comm);
}

NcclTransport::Communicator& NcclTransport::communicator(const Prepared& p) {
  return p.overlaps && split_ ? capped_ : reference_;
}
const NcclTransport::Communicator& NcclTransport::communicator(const Prepared& p) const {
  return p.overlaps && split_ ? capped_ : reference_;
}

// ncclMemAlloc's memory (cuMem, mapped for every peer) is what NCCL 2.28 can register for
// zero-copy transfers; cudaMalloc's is not, unless NCCL_LEGACY_CUDA_REGISTER=1 (src/transport/
// p2p.cc, ipcRegisterBuffer).
void* NcclTransport::allocate(size_t bytes) {
  void* ptr = nullptr;
  check_.nccl(ncclMemAlloc(&ptr, bytes), "ncclMemAlloc for a plan buffer");
  return ptr;
}

void NcclTransport::free(void* ptr) {
  if (ptr) ncclMemFree(ptr);
}

// Every buffer, on every rank, with the communicator the plan uses: NCCL requires both sides of
// a transfer registered (NCCL User Guide, "User Buffer Registration").
void NcclTransport::prepare(const Plan& plan, Prepared& p) {
  Communicator& c = communicator(p);
  const int elem = dtype_bytes(plan.dtype);
  for (size_t i = 0; i < p.device.size(); ++i) {
    const size_t bytes =
        static_cast<size_t>(std::max<int64_t>(plan.buffers[i].rows * plan.buffers[i].cols, 1)) *
        elem;
    void* handle = nullptr;
    check_.nccl(ncclCommRegister(c.comm, p.device[i], bytes, &handle), "ncclCommRegister");
    p.registered.push_back(handle);
    p.registered_bytes += static_cast<int64_t>(bytes);
  }
  p.registered_with = c.comm;
}

void NcclTransport::unprepare(Prepared& p) {
  for (void* handle : p.registered) {
    if (handle) ncclCommDeregister(static_cast<ncclComm_t>(p.registered_with), handle);
  }
  p.registered.clear();
}

void NcclTransport::begin(const PlanBuffers& buffers) {
  at_ = buffers;
  current_ = &communicator(buffers.prepared());
  nccl_ = current_->comm;
}

void NcclTransport::enqueue(const Task& t, cudaStream_t stream) {
  if (t.kind == TaskKind::collective) {
    collective(t, stream);
  } else {
    exchange(t, stream);
  }
}

// The connections NCCL made in this iteration (it connects a peer at its first use) belong to
// the communicator the iteration used.
void NcclTransport::iteration_done() {
  const std::vector<std::string> lines = nccl_log(rank_).take();
  if (lines.empty()) return;
  const int rank = loopback_ ? 0 : rank_;
  for (bool p2p : {true, false}) {
    auto& into = p2p ? current_->p2p : current_->collective;
    for (auto& [peer, transports] : parse_nccl_transports(lines, rank, p2p)) {
      std::vector<std::string>& seen = into[peer];
      for (const std::string& t : transports) {
        if (std::find(seen.begin(), seen.end(), t) == seen.end()) seen.push_back(t);
      }
    }
  }
}

std::vector<std::string> NcclTransport::case_facts(const Prepared& p) const {
  const Communicator& c = communicator(p);
  auto number = [](int n) { return n < 0 ? std::string("not reported") : std::to_string(n); };
  std::vector<std::string> facts = {
      std::string("nccl_communicator=") + (&c == &capped_ ? "capped" : "reference"),
      "nccl_cta_limit=" + c.cap,
      "nccl_coll_channels=" + number(c.facts.coll_channels),
      "nccl_p2p_channels=" + number(c.facts.p2p_channels),
      "nccl_p2p_channels_per_peer=" + number(c.facts.p2p_channels_per_peer),
      "nccl_nvls_channels=" + number(c.facts.nvls_channels),
      "nccl_ring_path=" + (c.facts.ring_intra.empty()
                               ? std::string("not reported")
                               : c.facts.ring_intra + "/" + c.facts.ring_inter),
      "nccl_local_ranks=" + number(c.facts.local_ranks),
      "nccl_p2p_transports=" + peers_text(c.p2p),
      "nccl_collective_transports=" + peers_text(c.collective),
      "nccl_registered=" + std::to_string(p.registered.size()) + " buffers, " +
          std::to_string(p.registered_bytes) + " bytes (ncclMemAlloc, ncclCommRegister)"};
  return facts;
}

int NcclTransport::transfer_sms(const Prepared& p) const {
  if (&communicator(p) == &capped_ && split_) return comm_sms_;
  return std::max(reference_.facts.coll_channels, reference_.facts.p2p_channels);
}

std::vector<std::string> NcclTransport::run_facts() const {
  const std::string& why = nccl_log(rank_).unavailable();
  return {"nccl_log=" +
          (why.empty() ? std::string("read (NCCL_DEBUG=INFO to a private file)") : why)};
}

std::optional<Transport::AsyncError> NcclTransport::async_error() {
  for (ncclComm_t comm : {reference_.comm, split_ ? capped_.comm : nullptr}) {
    if (!comm) continue;
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess) return AsyncError{"NCCL error while", ncclGetErrorString(async)};
  }
  return std::nullopt;
}

// Aborting the communicators is what unblocks NCCL kernels waiting for a peer that will never
// come; a hung rank then exits instead of holding its GPU.
void NcclTransport::abort() {
  if (split_ && capped_.comm) ncclCommAbort(capped_.comm);
  if (reference_.comm) ncclCommAbort(reference_.comm);
  capped_.comm = reference_.comm = nccl_ = nullptr;
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
  // Blocks a stride apart (a chunk of a buffer kept in token order): NCCL's all-gather writes
  // one contiguous range, so the chunk moves as point-to-point in one group, this rank's block
  // to every other rank and each rank's block received in its place. Every rank sends the N-1
  // blocks a ring all-gather sends, and nothing is staged or copied afterwards.
  check_.nccl(ncclGroupStart(), "ncclGroupStart");
  for (int j = 0; j < world; ++j) {
    if (j == rank) continue;
    check_.nccl(ncclSend(at_.device_at(t.a), block, type, j, nccl_, stream), "ncclSend");
    check_.nccl(ncclRecv(at_.device_at(t.c, j * stride), block, type, j, nccl_, stream),
                "ncclRecv");
  }
  check_.nccl(ncclGroupEnd(), "ncclGroupEnd");
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

// Every block is whole rows, so each span is contiguous: per peer one send per span this rank
// sends it and one receive per span it sends this rank (this rank's own included: NCCL copies
// those locally), all in one group, so that NCCL runs them together rather than rank after
// rank and matches a peer's sends and receives in the order they were posted, which is the
// spans' pairing (PeerSpans). ncclAlltoAll (NCCL 2.28) takes only equal blocks back to back,
// which neither a batch's chunks nor an all-to-all-v's blocks are; packing them around it would
// add two passes.
//
// Loopback: the N pairs all go to this process, where the group matches the sends and receives
// to one peer in the order they were posted, so block j arrives in block j's place. The inputs
// repeat (CaseSpec::loopback), so every block of a rank is alike and block j is what rank j
// would have sent; sending each block from its own place keeps every offset exercised, as
// the host path's pairwise all-to-all does.
void NcclTransport::all_to_all(const Task& t, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(at_.plan().dtype);
  const int64_t width = at_.plan().buffers[t.c.buffer].cols;
  const PeerSpans blocks = all_to_all_blocks(at_.plan(), t);
  auto view = [](int buffer, const RowSpan& span) {
    return View{buffer, span.row, span.rows, 0, 0};
  };
  check_.nccl(ncclGroupStart(), "ncclGroupStart");
  for (int j = 0; j < at_.plan().world; ++j) {
    for (const RowSpan& span : blocks.send[j]) {
      check_.nccl(ncclSend(at_.device_at(view(t.a.buffer, span)), span.rows * width, type,
                           nccl_peer(j), nccl_, stream),
                  "ncclSend");
    }
    for (const RowSpan& span : blocks.recv[j]) {
      check_.nccl(ncclRecv(at_.device_at(view(t.c.buffer, span)), span.rows * width, type,
                           nccl_peer(j), nccl_, stream),
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
