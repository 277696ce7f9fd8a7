// Running GoogleTest under mpirun: every rank runs every test, only rank 0 prints progress, and
// the process fails if any rank failed. MPI is initialised by the caller's main(), or by
// mpi_gtest_main() where the test needs nothing else.
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

// A whole main(): MPI as fobench initialises it, every test on every rank, MPI finalised.
inline int mpi_gtest_main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = run_tests_on_every_rank();
  MPI_Finalize();
  return failed;
}

}  // namespace fob
