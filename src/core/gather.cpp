#include "gather.h"

#include <algorithm>
#include <climits>

namespace fob {

int64_t gather_piece_bytes(int world) {
  return std::max<int64_t>(1, INT_MAX / std::max(world, 1));
}

GatherRound gather_round(const std::vector<int64_t>& counts, int64_t offset, int64_t piece) {
  GatherRound round;
  for (const int64_t count : counts) {
    const int64_t n = std::clamp<int64_t>(count - offset, 0, piece);
    round.displs.push_back(static_cast<int>(round.total));
    round.counts.push_back(static_cast<int>(n));
    round.total += n;
  }
  return round;
}

std::vector<std::vector<char>> gather_bytes(MPI_Comm comm, const std::vector<char>& mine) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  // 64-bit sizes: a case's timings at many iterations and ranks pass 2 GiB, which an int count
  // would wrap.
  const int64_t count = static_cast<int64_t>(mine.size());
  std::vector<int64_t> counts(world);
  MPI_Gather(&count, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, 0, comm);
  int64_t longest = count;
  MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_INT64_T, MPI_MAX, comm);
  std::vector<std::vector<char>> out(rank == 0 ? world : 0);
  if (rank == 0) {
    for (int r = 0; r < world; ++r) out[r].reserve(static_cast<size_t>(counts[r]));
  }
  const int64_t piece = gather_piece_bytes(world);
  std::vector<char> buffer;
  for (int64_t offset = 0; offset < longest; offset += piece) {
    const int n = static_cast<int>(std::clamp<int64_t>(count - offset, 0, piece));
    const char* send = n > 0 ? mine.data() + offset : mine.data();
    GatherRound round;
    if (rank == 0) {
      round = gather_round(counts, offset, piece);
      buffer.resize(static_cast<size_t>(std::max<int64_t>(round.total, 1)));
    }
    MPI_Gatherv(send, n, MPI_CHAR, buffer.data(), round.counts.data(), round.displs.data(),
                MPI_CHAR, 0, comm);
    if (rank != 0) continue;
    for (int r = 0; r < world; ++r) {
      const char* from = buffer.data() + round.displs[r];
      out[r].insert(out[r].end(), from, from + round.counts[r]);
    }
  }
  return out;
}

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  std::vector<std::string> out;
  for (const std::vector<char>& bytes : gather_bytes(comm, {mine.begin(), mine.end()})) {
    out.emplace_back(bytes.begin(), bytes.end());
  }
  return out;
}

std::vector<std::string> allgather_strings(MPI_Comm comm, const std::string& mine) {
  int world = 1;
  MPI_Comm_size(comm, &world);
  std::vector<std::string> out = gather_strings(comm, mine);
  std::vector<int64_t> lengths(static_cast<size_t>(world));
  std::string joined;
  for (size_t r = 0; r < out.size(); ++r) {
    lengths[r] = static_cast<int64_t>(out[r].size());
    joined += out[r];
  }
  MPI_Bcast(lengths.data(), world, MPI_INT64_T, 0, comm);
  int64_t total = 0;
  for (const int64_t n : lengths) total += n;
  joined.resize(static_cast<size_t>(total));
  for (int64_t offset = 0; offset < total; offset += INT_MAX) {
    const int n = static_cast<int>(std::min<int64_t>(total - offset, INT_MAX));
    MPI_Bcast(joined.data() + offset, n, MPI_CHAR, 0, comm);
  }
  out.assign(static_cast<size_t>(world), {});
  size_t at = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    out[r] = joined.substr(at, static_cast<size_t>(lengths[r]));
    at += static_cast<size_t>(lengths[r]);
  }
  return out;
}

}  // namespace fob
