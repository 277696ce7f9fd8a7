#include "gather.h"

#include <algorithm>

namespace fob {

std::vector<std::vector<char>> gather_bytes(MPI_Comm comm, const std::vector<char>& mine) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(world), displs(world);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < world; ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<char> all(rank == 0 ? std::max(total, 1) : 1);
  MPI_Gatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0,
              comm);
  std::vector<std::vector<char>> out;
  if (rank == 0) {
    for (int r = 0; r < world; ++r) {
      out.emplace_back(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
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

}  // namespace fob
