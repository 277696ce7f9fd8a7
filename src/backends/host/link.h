// Point-to-point transfers over MPI for the CPU backend's comm thread, with optional link
// emulation: a transfer completes no earlier than latency + bytes/bandwidth after both sides
// have posted it. The bytes really move; emulation only holds completion back.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <mpi.h>

#include "fob/backend.h"
#include "fob/plan.h"

namespace fob {

class Link {
 public:
  // Collective over `comm`: estimates each rank's clock offset from rank 0 so that post times
  // can be compared across processes. With `loopback` every peer is this process itself
  // (BackendOptions::loopback): both halves of a transfer go to and come from its own rank.
  Link(MPI_Comm comm, const LinkEmulation& emulation, const std::atomic<bool>& abort,
       bool loopback = false);

  // Sends `send_count` elements to `send_peer` and receives `recv_count` into `recv` from
  // `recv_peer` (either side may be absent: peer < 0). Returns when both are done, or when
  // abort is raised (then returns false).
  bool transfer(const void* send, int64_t send_count, int send_peer, void* recv, int64_t recv_count,
                int recv_peer, int tag, MPI_Datatype type, int elem_bytes);
  // One message of each datatype (strided chunks, say) each way; `bytes` is what each side
  // moves, for the emulated link.
  bool transfer(const void* send, MPI_Datatype send_type, int send_peer, void* recv,
                MPI_Datatype recv_type, int recv_peer, int tag, int64_t bytes);

  // A committed MPI datatype of `batch` blocks of `count` elements, `step` elements apart. Made
  // once per layout and kept until the link goes, so that committing it is not timed.
  MPI_Datatype strided_type(int batch, int64_t count, int64_t step, MPI_Datatype element);
  // A committed MPI datatype over row spans of a buffer `width` elements wide, from the first
  // span's start: one message however the spans lie. Evenly spaced spans are a strided_type;
  // others (an all-to-all-v's blocks) an hindexed type, kept as strided_type keeps its own.
  MPI_Datatype spans_type(const std::vector<RowSpan>& spans, int64_t width, MPI_Datatype element);

  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // `computing` is up while a compute thread of this rank runs on the cores this rank's waits
  // would spin on (the CPU backend's GEMMs): waits then back off instead of polling eagerly.
  // Without it (a GPU computes) every wait polls eagerly.
  void share_cores_with(const std::atomic<bool>& computing) { computing_ = &computing; }

  // Human-readable state for timeout messages.
  std::string state() const;

  // What the emulation delivered so far, summed over every emulated transfer: the time each
  // should have taken (its latency and its bytes at the emulated rate, from when both sides
  // had posted it) and the time it took to that point. Read it while no transfer runs.
  struct Account {
    double target_s = 0, actual_s = 0;
    int64_t transfers = 0;
  };
  const Account& account() const { return account_; }

 private:
  bool post_and_wait(const void* send, int send_count, MPI_Datatype send_type, int send_peer,
                     void* recv, int recv_count, MPI_Datatype recv_type, int recv_peer, int tag,
                     double bytes);
  double global_now() const;
  bool wait_all(int count, MPI_Request* requests);
  // The MPI rank a plan's peer maps to: MPI_PROC_NULL for an absent side.
  int mpi_peer(int peer) const;

  MPI_Comm comm_;
  LinkEmulation emulation_;
  const std::atomic<bool>& abort_;
  const std::atomic<bool>* computing_ = nullptr;
  double clock_offset_ = 0;
  bool loopback_ = false;
  int self_ = 0;
  std::atomic<int> waiting_peer_{-1};
  std::atomic<bool> emulating_{false};
  Account account_;
  std::map<std::tuple<int, int64_t, int64_t, MPI_Datatype>, MPI_Datatype> strided_types_;
  std::map<std::pair<std::vector<int64_t>, MPI_Datatype>, MPI_Datatype> span_types_;
};

}  // namespace fob
