// Gathering variable-sized data from every rank to rank 0.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace fob {

// Each rank's bytes, on rank 0 (empty elsewhere).
std::vector<std::vector<char>> gather_bytes(MPI_Comm comm, const std::vector<char>& mine);

// Each rank's string, on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine);

}  // namespace fob
