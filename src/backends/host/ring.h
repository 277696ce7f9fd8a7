// Ring collectives over host memory and a Link, as NCCL runs them: N-1 steps of one block
// each, so an emulated link prices a collective exactly as it prices the strategies' P2P rings.
// Shared by the CPU backend and the cuda backend's host-staged (--transport mpi) path.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "fob/plan.h"
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

// All-to-all over row spans (transfer_messages.h's all_to_all_blocks): `src` and `dst` are
// the first rows of the source and destination buffers, `width` elements a row. This rank's own
// spans are copied; step s = 1..N-1 sends its spans for r+s to r+s while receiving r-s's, the
// pairwise exchange NCCL and MPI run, each way one message (a datatype over the spans, whether
// even chunks or uneven blocks) on one link. A step with nothing either way is skipped, as
// all-to-all-v implementations skip empty pairs; the emulated link prices a step by the larger
// side, its two directions running at once.
inline void pairwise_all_to_all(Link& link, int rank, int world, const PeerSpans& blocks,
                                const void* src, void* dst, int64_t width, MPI_Datatype type,
                                int elem_bytes, const std::atomic<bool>& abort) {
  const int64_t row_bytes = width * elem_bytes;
  auto send_at = [&](int64_t row) { return static_cast<const char*>(src) + row * row_bytes; };
  auto recv_at = [&](int64_t row) { return static_cast<char*>(dst) + row * row_bytes; };
  const std::vector<RowSpan>& own_from = blocks.send[rank];
  const std::vector<RowSpan>& own_to = blocks.recv[rank];
  for (size_t i = 0; i < own_to.size() && i < own_from.size(); ++i) {
    std::memcpy(recv_at(own_to[i].row), send_at(own_from[i].row),
                static_cast<size_t>(own_to[i].rows * row_bytes));
  }
  for (int s = 1; s < world && !abort; ++s) {
    const int to = ring_index(rank + s, world), from = ring_index(rank - s, world);
    const std::vector<RowSpan>& out = blocks.send[to];
    const std::vector<RowSpan>& in = blocks.recv[from];
    if (out.empty() && in.empty()) continue;
    const int64_t bytes = std::max(span_rows(out), span_rows(in)) * row_bytes;
    link.transfer(out.empty() ? nullptr : send_at(out.front().row),
                  out.empty() ? type : link.spans_type(out, width, type), out.empty() ? -1 : to,
                  in.empty() ? nullptr : recv_at(in.front().row),
                  in.empty() ? type : link.spans_type(in, width, type), in.empty() ? -1 : from,
                  kCollectiveTagBase + s, bytes);
  }
}

}  // namespace fob
