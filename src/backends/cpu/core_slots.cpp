#include "core_slots.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "fob/types.h"

namespace fob {

CoreSlots::CoreSlots(MPI_Comm comm, int threads_per_rank) {
  MPI_Comm local;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  local_ranks_ = local_size;
  local_rank_ = local_rank;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const bool oversubscribed = cores > 0 && local_size * threads_per_rank > cores;
  // The host's first rank names the semaphore after its pid, unique while the run lasts.
  long id = local_rank == 0 ? static_cast<long>(getpid()) : 0;
  MPI_Bcast(&id, 1, MPI_LONG, 0, local);
  if (oversubscribed) {
    slots_ = std::max(1, cores / threads_per_rank);
    name_ = "/fobench-slots-" + std::to_string(id);
    if (local_rank == 0) {
      sem_unlink(name_.c_str());
      sem_ = sem_open(name_.c_str(), O_CREAT | O_EXCL, 0600, static_cast<unsigned>(slots_));
      owner_ = true;
    }
    MPI_Barrier(local);
    if (local_rank != 0) sem_ = sem_open(name_.c_str(), 0);
    if (sem_ == SEM_FAILED) sem_ = nullptr;
    int ok = sem_ ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, local);
    if (!all) {
      // Without shared slots the run is still correct, only less even; say nothing and go on.
      if (sem_) sem_close(sem_);
      sem_ = nullptr;
      slots_ = 0;
    }
  } else {
    MPI_Barrier(local);
  }
  MPI_Comm_free(&local);
}

CoreSlots::~CoreSlots() {
  if (!sem_) return;
  sem_close(sem_);
  if (owner_) sem_unlink(name_.c_str());
}

bool CoreSlots::acquire(const std::atomic<bool>& abort) {
  if (!sem_) return true;
  while (!abort.load(std::memory_order_relaxed)) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 50 * 1000 * 1000;
    if (deadline.tv_nsec >= 1000000000) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1000000000;
    }
    if (sem_timedwait(sem_, &deadline) == 0) return true;
    if (errno != ETIMEDOUT && errno != EINTR) return true;  // a broken slot must not hang a run
  }
  return false;
}

void CoreSlots::release() {
  if (sem_) sem_post(sem_);
}

}  // namespace fob
