// When a host runs more ranks than it has cores, each rank stands for a device of its own but
// the ranks time-share the cores. Left to the scheduler, ranks that compute at the same moment
// thrash each other's caches every time slice, so a schedule in which ranks happen to wait
// more looks faster than one that keeps every rank busy, and compute_only stops being a lower
// bound. CoreSlots hands out at most `cores` GEMM slots per host, so compute tasks take turns
// whole instead; with no more ranks than cores it does nothing.
#pragma once

#include <mpi.h>
#include <semaphore.h>

#include <atomic>
#include <string>

namespace fob {

class CoreSlots {
 public:
  // Collective over `comm`: the ranks of each host agree on one named semaphore.
  CoreSlots(MPI_Comm comm, int threads_per_rank);
  ~CoreSlots();
  CoreSlots(const CoreSlots&) = delete;
  CoreSlots& operator=(const CoreSlots&) = delete;

  int slots() const { return slots_; }
  int local_ranks() const { return local_ranks_; }  // ranks on this host
  int local_rank() const { return local_rank_; }    // this rank's place among them
  // Blocks until a slot is free (or `abort` is raised: then returns false).
  bool acquire(const std::atomic<bool>& abort);
  void release();

 private:
  sem_t* sem_ = nullptr;
  std::string name_;
  bool owner_ = false;
  int slots_ = 0;
  int local_ranks_ = 1;
  int local_rank_ = 0;
};

}  // namespace fob
