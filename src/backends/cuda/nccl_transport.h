// The cuda backend's transfers over NCCL: exchanges as grouped ncclSend/ncclRecv, collectives
// as ncclAllGather/ncclReduceScatter and all-to-all as one group of ncclSend/ncclRecv with
// every rank (as nccl-tests' alltoall), all on the stream the backend gives them. In loopback
// (BackendOptions::loopback) the communicator has one rank, this process: the collective call
// covers its own block and every other rank's block moves by a send to itself and a receive in
// the same group, which NCCL allows.
//
// Two communicators over the same ranks (docs/fairness.md): the reference one with
// NCCL's own CTA limits, on which plans that never run a transfer beside a GEMM (comm_only,
// baseline) move their data, and one split from it with maxCTAs = --comm-sms, on which the
// overlapping plans move theirs while their GEMMs leave those SMs free. Plan buffers come from
// ncclMemAlloc and are registered (ncclCommRegister) with the communicator the plan uses, so
// that eager iterations and captured graphs alike send without NCCL's staging copy.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>

#include "cuda_util.h"
#include "fob/nccl_log.h"
#include "nccl_log_capture.h"
#include "transport.h"

namespace fob {

class NcclTransport : public Transport {
 public:
  // Collective over `comm`: makes both communicators; with `comm_sms` 0 they are one, uncapped.
  // `mem_pitch` is the largest pitch cudaMemcpy2DAsync takes.
  NcclTransport(MPI_Comm comm, int rank, int world, int comm_sms, bool loopback, size_t mem_pitch,
                const Checker& check);
  ~NcclTransport() override;

  std::string name() const override { return "nccl"; }
  void* allocate(size_t bytes) override;
  void free(void* ptr) override;
  void prepare(const Plan& plan, Prepared& p) override;
  void unprepare(Prepared& p) override;
  void begin(const PlanBuffers& buffers) override;
  void enqueue(const Task& t, cudaStream_t stream) override;
  void iteration_done() override;
  std::vector<std::string> case_facts(const Prepared& p) const override;
  std::vector<std::string> run_facts() const override;
  // The capped communicator's cap for an overlapping plan; else the reference communicator's
  // channels (each runs one CTA), the more of collective and p2p; -1 where NCCL did not say.
  int transfer_sms(const Prepared& p) const override;
  std::optional<AsyncError> async_error() override;
  void abort() override;

 private:
  struct Communicator {
    ncclComm_t comm = nullptr;
    NcclCommFacts facts;
    std::string cap;  // what limits its CTAs, in words
    // Transports per peer as NCCL reported them when it connected (lazily, at first use).
    std::map<int, std::vector<std::string>> p2p, collective;
  };
  Communicator& communicator(const Prepared& p);
  const Communicator& communicator(const Prepared& p) const;
  void exchange(const Task& t, cudaStream_t stream);
  void collective(const Task& t, cudaStream_t stream);
  void all_gather(const Task& t, cudaStream_t stream);
  void reduce_scatter(const Task& t, cudaStream_t stream);
  void all_to_all(const Task& t, cudaStream_t stream);
  int nccl_peer(int peer) const { return loopback_ ? 0 : peer; }
  // `count` blocks of `width` bytes, `src_pitch` apart, to `dst_pitch` apart, on `stream`.
  void copy_blocks(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                   int count, cudaStream_t stream, const char* what);

  Checker check_;
  int rank_ = 0;
  bool loopback_ = false;
  size_t mem_pitch_ = 0;
  Communicator reference_, capped_;
  bool split_ = false;  // capped_ is a communicator of its own
  int comm_sms_ = 0;    // capped_'s maxCTAs where split_
  Communicator* current_ = &reference_;
  ncclComm_t nccl_ = nullptr;      // the current plan's communicator
  bool connections_read_ = false;  // this plan's first iteration's connection lines are read
  PlanBuffers at_;
};

}  // namespace fob
