#include "link.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>
#include <vector>

namespace fob {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void sleep_until_steady(double t) {
  const double now = steady_seconds();
  if (t <= now) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(t - now));
}

// A sleeping thread wakes tens of microseconds late where its core went idle meanwhile (more
// in a virtual machine, whose idle CPU the host deschedules), by an amount that drifts with the
// machine's state: small transfers' emulated times moved 15% between runs so. Sleep until
// kSpinWindow before `t`, then poll the clock, yielding the core to any thread that wants it.
void wait_until_steady(double t) {
  constexpr double kSpinWindow = 200e-6, kTightWindow = 20e-6;
  sleep_until_steady(t - kSpinWindow);
  // A yield costs a system call, and where another thread shares the core, its time slice:
  // the last microseconds poll the clock alone, holding the core at most kTightWindow.
  while (steady_seconds() < t - kTightWindow) sched_yield();
  while (steady_seconds() < t) {
  }
}

// A thread's sleeps end up to its timer slack late, 50 us by default: more than a short pause
// between polls. Once per thread that waits.
void precise_sleeps() {
  static thread_local const bool set = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)set;
}

// Per rank of `comm`, the rank in `comm` of the lowest rank on its node (collective): ranks
// with the same value share a node.
std::vector<int> node_leaders(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  std::vector<int> leaders(static_cast<size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  return leaders;
}

}  // namespace

std::string LinkEmulation::describe() const {
  if (!enabled()) return "none";
  char text[128];
  std::snprintf(text, sizeof text, "emulated: %g Gbit/s, %g us latency per transfer", gbps,
                latency_us);
  return text;
}

Link::Link(MPI_Comm comm, const LinkEmulation& emulation, const std::atomic<bool>& abort,
           bool loopback)
    : comm_(comm), emulation_(emulation), abort_(abort), loopback_(loopback) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  self_ = rank;
  // Ranks on rank 0's node read the same steady clock (CLOCK_MONOTONIC is the node's), so their
  // offset is 0 exactly; an estimate would be off by up to half a round trip, a constant of
  // some microseconds for the whole run that moved small transfers' emulated times between
  // runs by 15%. Ranks elsewhere use Cristian's algorithm against rank 0, keeping the round
  // trip with the least delay.
  const std::vector<int> leaders = node_leaders(comm_);
  constexpr int kRounds = 16;
  for (int peer = 1; peer < size; ++peer) {
    if (leaders[peer] == leaders[0]) continue;
    if (rank == 0) {
      for (int i = 0; i < kRounds; ++i) {
        double dummy = 0;
        MPI_Recv(&dummy, 1, MPI_DOUBLE, peer, 0, comm_, MPI_STATUS_IGNORE);
        double now = steady_seconds();
        MPI_Send(&now, 1, MPI_DOUBLE, peer, 0, comm_);
      }
    } else if (rank == peer) {
      double best_rtt = std::numeric_limits<double>::infinity();
      for (int i = 0; i < kRounds; ++i) {
        double sent = steady_seconds(), remote = 0;
        MPI_Send(&sent, 1, MPI_DOUBLE, 0, 0, comm_);
        MPI_Recv(&remote, 1, MPI_DOUBLE, 0, 0, comm_, MPI_STATUS_IGNORE);
        double back = steady_seconds();
        if (back - sent < best_rtt) {
          best_rtt = back - sent;
          clock_offset_ = remote - (sent + back) / 2;
        }
      }
    }
  }
}

int Link::mpi_peer(int peer) const {
  if (peer < 0) return MPI_PROC_NULL;
  return loopback_ ? self_ : peer;
}

double Link::global_now() const {
  return steady_seconds() + clock_offset_;
}

bool Link::wait_all(int count, MPI_Request* requests) {
  // Open MPI moves a message only inside MPI calls, on both sides, one protocol round per call
  // (a rendezvous takes several), so a wait must poll, and every pause between polls can hold a
  // round back. Poll eagerly, yielding the core between polls to any other thread that wants
  // it (another rank's, where ranks share cores), unless this rank's compute thread is running:
  // then sleep between polls, doubling the pause while nothing completes, so the GEMMs keep
  // their core and a late peer costs a few thousand wake-ups a second at most.
  precise_sleeps();
  constexpr double kFirstPauseUs = 2, kMaxPauseUs = 200;
  double pause_us = kFirstPauseUs;
  int remaining = count;
  while (true) {
    int done = 0;
    int indices[4];
    MPI_Testsome(count, requests, &done, indices, MPI_STATUSES_IGNORE);
    if (done == MPI_UNDEFINED) return true;
    remaining -= done;
    if (remaining == 0) return true;
    if (abort_.load(std::memory_order_relaxed)) return false;
    if (done > 0) pause_us = kFirstPauseUs;
    if (computing_ == nullptr || !computing_->load(std::memory_order_relaxed)) {
      sched_yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(pause_us));
    pause_us = std::min(pause_us * 2, kMaxPauseUs);
  }
}

Link::~Link() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& entry : strided_types_) MPI_Type_free(&entry.second);
  for (auto& entry : span_types_) MPI_Type_free(&entry.second);
}

MPI_Datatype Link::strided_type(int batch, int64_t count, int64_t step, MPI_Datatype element) {
  const auto key = std::make_tuple(batch, count, step, element);
  auto found = strided_types_.find(key);
  if (found != strided_types_.end()) return found->second;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Type_vector(batch, static_cast<int>(count), static_cast<int>(step), element, &type);
  MPI_Type_commit(&type);
  strided_types_.emplace(key, type);
  return type;
}

MPI_Datatype Link::spans_type(const std::vector<RowSpan>& spans, int64_t width,
                              MPI_Datatype element) {
  int64_t step = 0;
  if (evenly_spaced(spans, &step)) {
    return strided_type(static_cast<int>(spans.size()), spans.front().rows * width, step * width,
                        element);
  }
  std::vector<int64_t> key{width};
  for (const RowSpan& span : spans) {
    key.push_back(span.row - spans.front().row);
    key.push_back(span.rows);
  }
  auto found = span_types_.find({key, element});
  if (found != span_types_.end()) return found->second;
  int elem_bytes = 0;
  MPI_Type_size(element, &elem_bytes);
  std::vector<int> lengths;
  std::vector<MPI_Aint> displacements;
  for (const RowSpan& span : spans) {
    lengths.push_back(static_cast<int>(span.rows * width));
    displacements.push_back(static_cast<MPI_Aint>((span.row - spans.front().row) * width) *
                            elem_bytes);
  }
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Type_create_hindexed(static_cast<int>(spans.size()), lengths.data(), displacements.data(),
                           element, &type);
  MPI_Type_commit(&type);
  span_types_.emplace(std::make_pair(std::move(key), element), type);
  return type;
}

bool Link::transfer(const void* send, int64_t send_count, int send_peer, void* recv,
                    int64_t recv_count, int recv_peer, int tag, MPI_Datatype type, int elem_bytes) {
  return post_and_wait(send, static_cast<int>(send_count), type, send_peer, recv,
                       static_cast<int>(recv_count), type, recv_peer, tag,
                       static_cast<double>(std::max(send_count, recv_count)) * elem_bytes);
}

bool Link::transfer(const void* send, MPI_Datatype send_type, int send_peer, void* recv,
                    MPI_Datatype recv_type, int recv_peer, int tag, int64_t bytes) {
  return post_and_wait(send, send_peer >= 0 ? 1 : 0, send_type, send_peer, recv,
                       recv_peer >= 0 ? 1 : 0, recv_type, recv_peer, tag,
                       static_cast<double>(bytes));
}

bool Link::post_and_wait(const void* send, int send_count, MPI_Datatype send_type, int send_peer,
                         void* recv, int recv_count, MPI_Datatype recv_type, int recv_peer, int tag,
                         double bytes) {
  const double posted = global_now();
  double peer_posted = posted;
  // An absent side talks to MPI_PROC_NULL, which completes at once.
  const int from = mpi_peer(recv_peer);
  const int to = mpi_peer(send_peer);
  // The data, and where the link is emulated each side's post time (the transfer starts when
  // both have posted); every rank runs the same emulation, so both sides agree on the count.
  const int n = emulation_.enabled() ? 4 : 2;
  MPI_Request requests[4];
  MPI_Irecv(recv, recv_count, recv_type, from, 2 * tag, comm_, &requests[0]);
  MPI_Isend(send, send_count, send_type, to, 2 * tag, comm_, &requests[1]);
  if (n == 4) {
    MPI_Irecv(&peer_posted, 1, MPI_DOUBLE, from, 2 * tag + 1, comm_, &requests[2]);
    MPI_Isend(&posted, 1, MPI_DOUBLE, to, 2 * tag + 1, comm_, &requests[3]);
  }
  waiting_peer_ = recv_peer >= 0 ? recv_peer : send_peer;
  const bool ok = wait_all(n, requests);
  if (!ok) {
    // Aborting: withdraw what is pending so that no request outlives this frame's buffers.
    for (int i = 0; i < n; ++i) {
      if (requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests[i]);
    }
  }
  // Completed requests are already null, so this returns at once on the normal path.
  MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
  waiting_peer_ = -1;
  if (!ok || !emulation_.enabled()) return ok;

  // A transfer starts when both sides have posted it and runs at the emulated rate.
  double seconds = emulation_.latency_us * 1e-6;
  if (emulation_.gbps > 0) seconds += bytes * 8 / (emulation_.gbps * 1e9);
  const double start = std::max(posted, peer_posted);
  waiting_peer_ = recv_peer >= 0 ? recv_peer : send_peer;
  emulating_ = true;
  // Where this rank's compute thread runs, a polling wait would take its core: sleep then.
  if (computing_ != nullptr && computing_->load(std::memory_order_relaxed)) {
    sleep_until_steady(start + seconds - clock_offset_);
  } else {
    wait_until_steady(start + seconds - clock_offset_);
  }
  emulating_ = false;
  waiting_peer_ = -1;
  account_.target_s += seconds;
  account_.actual_s += global_now() - start;
  ++account_.transfers;
  return !abort_.load();
}

std::string Link::state() const {
  int peer = waiting_peer_.load();
  if (peer < 0) return "not in a transfer";
  return (emulating_ ? "in the emulated link delay of a transfer with rank "
                     : "waiting for rank ") +
         std::to_string(peer);
}

}  // namespace fob
