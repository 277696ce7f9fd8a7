// The cuda backend's transfers over NCCL: exchanges as grouped ncclSend/ncclRecv, collectives
// as ncclAllGather/ncclReduceScatter and all-to-all as one group of ncclSend/ncclRecv with
// every rank (as nccl-tests' alltoall), all on the stream the backend gives them. In loopback
// (BackendOptions::loopback) the communicator has one rank, this process: the collective call
// covers its own block and every other rank's block moves by a send to itself and a receive in
// the same group, which NCCL allows.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include "cuda_util.h"
#include "transport.h"

namespace fob {

class NcclTransport : public Transport {
 public:
  // Collective over `comm`: makes the communicator, its kernels on no more CTAs (one per SM)
  // than `comm_sms` where that is > 0. `mem_pitch` is the largest pitch cudaMemcpy2DAsync takes.
  NcclTransport(MPI_Comm comm, int rank, int world, int comm_sms, bool loopback, size_t mem_pitch,
                const Checker& check);
  ~NcclTransport() override;

  std::string name() const override { return "nccl"; }
  void begin(const PlanBuffers& buffers) override { at_ = buffers; }
  void enqueue(const Task& t, cudaStream_t stream) override;
  std::optional<AsyncError> async_error() override;
  void abort() override;

 private:
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
  bool loopback_ = false;
  size_t mem_pitch_ = 0;
  ncclComm_t nccl_ = nullptr;
  PlanBuffers at_;
};

}  // namespace fob
