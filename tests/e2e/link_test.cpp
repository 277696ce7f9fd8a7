// How the CPU comm path waits (run with mpirun -np 2): a transfer whose peer is late is polled
// eagerly while nothing computes on the rank, and backs off, leaving the core to the GEMMs,
// while its compute thread runs. Asserted through what the kernel counts for the waiting
// thread, which load on the machine can only move the safe way: a thread that sleeps between
// polls switches out voluntarily every pause; one that only yields never does, and a thread that
// sleeps uses a small share of the wall time in CPU time.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../common/mpi_gtest.h"
#include "backends/host/link.h"

namespace fob {
namespace {

constexpr double kLateSeconds = 0.3;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

long voluntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

struct WaitCost {
  double wall = 0, cpu = 0;
  long sleeps = 0;
};

// Rank 0 exchanges 4 KiB with rank 1, which posts kLateSeconds late; rank 0's wait, measured.
WaitCost late_peer_wait(bool computing_on_rank0) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::atomic<bool> abort{false}, computing{computing_on_rank0};
  Link link(MPI_COMM_WORLD, LinkEmulation{}, abort);
  link.share_cores_with(computing);
  std::vector<float> send(1024, 1.0f), recv(1024, 0.0f);
  const int peer = 1 - rank;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_seconds();
  const long switches0 = voluntary_switches();
  const bool ok = link.transfer(send.data(), 1024, peer, recv.data(), 1024, peer, 7, MPI_FLOAT, 4);
  WaitCost cost;
  cost.sleeps = voluntary_switches() - switches0;
  cost.cpu = thread_cpu_seconds() - cpu0;
  cost.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  EXPECT_TRUE(ok);
  EXPECT_EQ(recv[0], 1.0f);
  return cost;
}

bool two_ranks() {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  return world == 2;
}

int this_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

TEST(Link, AWaitWhileTheRankComputesSleepsBetweenPolls) {
  if (!two_ranks()) GTEST_SKIP() << "needs 2 ranks";
  const WaitCost cost = late_peer_wait(true);
  if (this_rank() != 0) return;
  ASSERT_GT(cost.wall, 0.8 * kLateSeconds);
  // Pauses of up to 200 us over 0.3 s: hundreds of sleeps, and the core left to the GEMMs.
  EXPECT_GT(cost.sleeps, 100) << "wall " << cost.wall << " s";
  EXPECT_LT(cost.cpu, 0.25 * cost.wall) << "sleeps " << cost.sleeps;
}

TEST(Link, AWaitWhileNothingComputesPollsWithoutSleeping) {
  if (!two_ranks()) GTEST_SKIP() << "needs 2 ranks";
  const WaitCost cost = late_peer_wait(false);
  if (this_rank() != 0) return;
  ASSERT_GT(cost.wall, 0.8 * kLateSeconds);
  // It yields the core between polls (an involuntary switch when another thread takes it) but
  // never sleeps: a sleep per pause would be thousands over 0.3 s.
  EXPECT_LT(cost.sleeps, 20) << "cpu " << cost.cpu << " s of " << cost.wall;
}

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  return fob::mpi_gtest_main(argc, argv);
}
