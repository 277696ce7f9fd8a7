// Ring collectives over host memory and a Link, as NCCL runs them: N-1 steps of one block
// each, so an emulated link prices a collective exactly as it prices the strategies' P2P rings.
// Shared by the CPU backend and the cuda backend's host-staged (--transport mpi) path.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "link.h"

namespace fob {

inline constexpr int kCollectiveTagBase = 1 << 20;

inline int ring_index(int j, int world) {
  return ((j % world) + world) % world;
}

// All-gather in place: block(j) is where rank j's block of `count` elements lies; this rank's
// own block is already there. Each step passes on the block received in the previous one.
template <typename Block>
void ring_all_gather(Link& link, int rank, int world, int64_t count, Block block, MPI_Datatype type,
                     int elem_bytes, const std::atomic<bool>& abort) {
  for (int s = 0; s < world - 1 && !abort; ++s) {
    link.transfer(block(ring_index(rank - s, world)), count, ring_index(rank + 1, world),
                  block(ring_index(rank - s - 1, world)), count, ring_index(rank - 1, world),
                  kCollectiveTagBase + s, type, elem_bytes);
  }
}

// Reduce-scatter: local(j) is this rank's contribution to block j; `out` receives the sum of
// block `rank` over all ranks. At step s the running sum of block r-s-1 goes on to r+1 and this
// rank's part of block r-s-2 is added to the sum received. temp[0..1] hold `count` elements.
template <typename T, typename Local, typename Add>
void ring_reduce_scatter(Link& link, int rank, int world, int64_t count, Local local, T* out,
                         T* temp[2], Add add, MPI_Datatype type, int elem_bytes,
                         const std::atomic<bool>& abort) {
  const T* sending = local(ring_index(rank - 1, world));
  for (int s = 0; s < world - 1 && !abort; ++s) {
    T* received = temp[s % 2];
    link.transfer(sending, count, ring_index(rank + 1, world), received, count,
                  ring_index(rank - 1, world), kCollectiveTagBase + s, type, elem_bytes);
    const T* mine = local(ring_index(rank - s - 2, world));
    T* sum = s == world - 2 ? out : received;
    for (int64_t i = 0; i < count; ++i) sum[i] = add(received[i], mine[i]);
    sending = received;
  }
}

// The layout of one all-to-all block: `batch` chunks of `count` elements, chunk i at
// i * send_step elements from the block's start where it is sent from and i * recv_step where
// it lands (one chunk per sequence of a batch-major buffer).
struct AllToAllChunks {
  int batch = 1;
  int64_t count = 0;
  int64_t send_step = 0, recv_step = 0;
};

// All-to-all: send(j) is where this rank's block for rank j starts and recv(j) where rank j's
// block lands. The own block is copied; step s = 1..N-1 sends to r+s while receiving from r-s,
// the pairwise exchange NCCL and MPI run, each step one message on one link.
template <typename Send, typename Recv>
void pairwise_all_to_all(Link& link, int rank, int world, const AllToAllChunks& chunks, Send send,
                         Recv recv, MPI_Datatype type, int elem_bytes,
                         const std::atomic<bool>& abort) {
  const size_t chunk_bytes = static_cast<size_t>(chunks.count * elem_bytes);
  for (int i = 0; i < chunks.batch; ++i) {
    std::memcpy(
        static_cast<char*>(static_cast<void*>(recv(rank))) + i * chunks.recv_step * elem_bytes,
        static_cast<const char*>(static_cast<const void*>(send(rank))) +
            i * chunks.send_step * elem_bytes,
        chunk_bytes);
  }
  // A block's chunks as one MPI datatype per side, so that a block is one message however it
  // lies; the link keeps them, so only the warm-up makes them.
  const MPI_Datatype send_type =
      link.strided_type(chunks.batch, chunks.count, chunks.send_step, type);
  const MPI_Datatype recv_type =
      link.strided_type(chunks.batch, chunks.count, chunks.recv_step, type);
  for (int s = 1; s < world && !abort; ++s) {
    link.transfer(send(ring_index(rank + s, world)), send_type, ring_index(rank + s, world),
                  recv(ring_index(rank - s, world)), recv_type, ring_index(rank - s, world),
                  kCollectiveTagBase + s, chunks.batch * chunks.count * elem_bytes);
  }
}

}  // namespace fob
