// Running GoogleTest under mpirun: every rank runs every test, only rank 0 prints progress, and
// the process fails if any rank failed. MPI is initialised by the caller's main().
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

namespace fob {

inline int run_tests_on_every_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Every rank's failures still reach stderr.
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failed;
}

}  // namespace fob
