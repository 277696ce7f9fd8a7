// Gathering variable-sized data from every rank to rank 0 (or to every rank).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fob {

// Each rank's bytes, on rank 0 (empty elsewhere). Any size: MPI counts and displacements are
// ints, so the bytes go in rounds whose total over all ranks stays within INT_MAX.
std::vector<std::vector<char>> gather_bytes(MPI_Comm comm, const std::vector<char>& mine);

// Each rank's string, on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine);

// Each rank's string, on every rank.
std::vector<std::string> allgather_strings(MPI_Comm comm, const std::string& mine);

// The most bytes one rank sends in one round of gather_bytes among `world` ranks.
int64_t gather_piece_bytes(int world);

// One round of gather_bytes: what each rank sends from byte `offset` of its `counts` bytes, at
// most `piece`, and where it lands in the round's buffer. Every int fits: `piece` times the
// number of ranks is at most INT_MAX.
struct GatherRound {
  std::vector<int> counts, displs;
  int64_t total = 0;
};
GatherRound gather_round(const std::vector<int64_t>& counts, int64_t offset, int64_t piece);

}  // namespace fob
