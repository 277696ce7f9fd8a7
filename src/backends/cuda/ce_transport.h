// The cuda backend's transfers on the copy engines (--transport ce), for ranks of one node: no
// NCCL kernel and no SM moves a byte. Every rank exports its plan buffers with CUDA IPC and maps
// its peers' once per case; a message is a cudaMemcpyAsync into the peer's buffer on the task's
// stream, which the driver runs on a copy engine, and the two sides order it with stream memory
// operations on flags in each other's memory (cuStreamWriteValue32 / cuStreamWaitValue32: the
// GPU's front end, no kernel). Transformer Engine's userbuffers copy the same way with use_ce
// but signal with one-thread kernels; here no kernel runs at all unless arithmetic must.
//
// Matching is NCCL's: the n-th message rank r sends to rank d lands in the n-th place d
// receives from r, both in plan order (transfer_messages.h). At prepare() every rank tells its
// peers where its receives lie (buffer, offset, bytes), so a send knows its destination.
//
// The flags, per ordered pair and numbered; every wait is on the waiter's own memory and every
// write goes to a peer's. Rank r's flag block holds, for each peer p,
//   ready[p]   — r may write its n-th message into p: written by p once the tasks that read the
//                destination last are done, waited for by r before it copies;
//   arrived[p] — p's n-th message to r is complete: written by p behind its copy (the default
//                write "will provide a memory fence before the write", CUDA Driver API, Stream
//                Memory Operations), waited for by r before the tasks that read it.
// Each side counts its messages per peer on the host and waits for "at least n" (the cyclic
// CU_STREAM_WAIT_VALUE_GEQ), so a flag is never reset and an old value never satisfies a later
// wait. The numbers are fixed when a task is queued, which is why --graphs is refused with ce.
//
// A reduce-scatter needs additions, which copy engines cannot do: each peer's partial sum lands
// in a stage of the receiver's and cuda::add adds it on the comm stream (its blocks are the SMs
// the transport takes, recorded per case as ce_sms).
#pragma once

#include <cuda.h>
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "cuda_util.h"
#include "transport.h"

namespace fob {

// Collective over `comm`: InputError, naming which ranks are where, unless every rank shares
// one node (MPI_COMM_TYPE_SHARED). Called before the device is chosen, whose check would
// otherwise take ranks of two nodes on one host for ranks sharing a GPU.
void ce_refuse_several_nodes(MPI_Comm comm, int rank, int world);

class CeTransport : public Transport {
 public:
  // Collective over `comm`: refuses (InputError) a driver without stream memory operations;
  // exports this rank's flags and maps every peer's.
  CeTransport(MPI_Comm comm, int rank, int world, int device, const Checker& check);
  ~CeTransport() override;

  std::string name() const override { return "ce"; }
  void* allocate(size_t bytes) override;
  void free(void* ptr) override;
  int64_t extra_bytes(const Plan& plan) const override;
  void prepare(const Plan& plan, Prepared& p) override;
  void unprepare(Prepared& p) override;
  void begin(const PlanBuffers& buffers) override;
  void enqueue(const Task& t, cudaStream_t stream) override;
  std::vector<std::string> case_facts(const Prepared& p) const override;
  std::vector<std::string> run_facts() const override;
  std::string kernel_timing_refused() const override;
  int transfer_sms(const Prepared& p) const override;
  void abort() override;

 private:
  // What a task queues, in order (ce_tasks.cpp builds it at prepare()).
  struct Op {
    enum class Kind : uint8_t { ready, local, send, arrival, add };
    Kind kind = Kind::local;
    int peer = -1;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
  };
  // Where a peer's message to this rank goes: a region (a plan buffer, or the stage at index
  // buffers.size()) and a byte offset in it.
  struct Slot {
    int64_t region = 0, offset = 0, bytes = 0;
  };
  struct Case {
    std::vector<std::vector<void*>> peer_regions;  // [peer][region]: mapped, or null
    void* stage = nullptr;                         // peers' partial sums, (world-1) slots
    std::vector<std::vector<Op>> ops;              // per task id
    int64_t mapped_bytes = 0;
    int copies = 0, adds = 0, add_blocks = 0;  // per iteration
  };

  // ce_transport.cpp
  void map_flags();
  std::vector<void*> export_regions(const Plan& plan, const Prepared& p, Case& c);
  void map_peer_regions(const std::vector<void*>& mine, Case& c);
  void close_peer_regions(Case& c);
  void write_flag(cudaStream_t stream, CUdeviceptr word, uint32_t value, const char* what);
  void wait_flag(cudaStream_t stream, CUdeviceptr word, uint32_t value, const char* what);
  CUdeviceptr own_word(int index) const;
  CUdeviceptr peer_word(int peer, int index) const;

  // ce_tasks.cpp
  std::vector<std::vector<Slot>> receive_slots(const Plan& plan, int64_t* stage_bytes) const;
  std::vector<std::vector<Slot>> exchange_slots(const std::vector<std::vector<Slot>>& mine) const;
  void build_ops(const Plan& plan, Prepared& p, const std::vector<std::vector<Slot>>& mine,
                 const std::vector<std::vector<Slot>>& to, Case& c) const;
  void queue_op(const Op& op, cudaStream_t stream, std::vector<uint32_t>& numbers, size_t& next);

  MPI_Comm comm_;
  int rank_ = 0, world_ = 1, device_ = 0;
  Checker check_;
  size_t mem_pitch_ = 0;
  int copy_engines_ = 0, sm_count_ = 0;
  using WriteFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  using WaitFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  WriteFn write_ = nullptr;
  WaitFn wait_ = nullptr;
  // This rank's flags: ready[p] at word p, arrived[p] at word world + p; and each peer's, mapped.
  void* flags_ = nullptr;
  std::vector<void*> peer_flags_;
  std::vector<uint32_t> sent_, received_;  // messages queued per peer, both ways
  std::map<const Prepared*, Case> cases_;
  const Case* current_ = nullptr;
  DType dtype_ = DType::fp32;
  bool aborted_ = false;
};

}  // namespace fob
