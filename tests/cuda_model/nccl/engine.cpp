// Communicators and the progress of a group of calls.
//
// Matching: "Any point-to-point communication needs two NCCL calls: a call to ncclSend() on one
// rank and a corresponding ncclRecv() on the other rank, with the same count and data type"
// and "point-to-point calls within a group targeting the same peer ... are executed in order"
// (NCCL User Guide, Point-to-point communication,
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/p2p.html): each ordered pair
// of ranks has a channel whose k-th send meets the k-th receive, and a count or type that
// differs is reported naming both calls. Collectives "have to be called for each rank ... to
// form a complete collective operation" (NCCL User Guide, Collective Operations,
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/operations.html): they run
// over their own channels, so the k-th collective of every rank meets the k-th of every other,
// and their kind, count, type and operator must agree.
//
// Progress: "calls within a group can be seen as progressing independently, hence should never
// block each other" (p2p.html): run() posts every call of the group, then moves whatever data
// can move, round after round, until all are done. A call outside a group is a group of one,
// so it holds its stream until the peer's matching call runs on the peer's stream.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "internal.h"

namespace fobnccl {
namespace {

constexpr int kP2p = 0, kColl = 1, kBoot = 2;     // the channel sets (segment.h)
constexpr uint64_t kPublishAfterNs = 10'000'000;  // a stall shorter than this is just a wait
constexpr uint64_t kCheckEveryNs = 100'000'000;

void sleep_backoff(int* backoff_us) {
  if (*backoff_us == 0) {
    std::this_thread::yield();
    *backoff_us = 1;
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(*backoff_us));
  *backoff_us = std::min(*backoff_us * 2, 1000);
}

void fill_desc(Desc* d, uint64_t seq, const Call& c, const std::string& text) {
  *d = Desc{};
  d->seq = seq;
  d->count = c.count;
  d->kind = static_cast<int32_t>(c.kind);
  d->dtype = static_cast<int32_t>(c.dtype);
  d->op = static_cast<int32_t>(c.op);
  std::snprintf(d->call, sizeof d->call, "%s", text.c_str());
}

}  // namespace

// One side of one message on a channel.
struct Item {
  int set = kP2p, src = 0, dst = 0, peer = 0;
  Side side = kSendSide;
  size_t call = 0;
  unsigned char* buf = nullptr;
  uint64_t bytes = 0, moved = 0;
  int state = 0;  // 0 waiting for earlier calls to the same peer, 1 posted, 2 matched, 3 done
  uint64_t k = 0;
  Desc mine{};
};

struct Progress {
  Comm& comm;
  Segment& seg;
  const std::vector<Call>& calls;
  std::vector<Item> items;
  std::vector<std::vector<unsigned char>> scratch;  // reduce-scatter: every rank's part, per call
  std::vector<uint64_t> coll_index;                 // per call: its collective number
  std::string failure;
  Result failed = kSuccess;
  // Collectives go over this channel set, numbered by this counter: the operations' (kColl) or
  // the bootstrap's (kBoot, whose waits are not published for the deadlock search: a rank can be
  // blocked in both at once, and the bootstrap's own limit is join_s).
  int coll_set = kColl;
  uint64_t* coll_count = nullptr;
  std::string boot_call;  // the API call a bootstrap allgather serves, for reports

  // How long the group has made no progress, and what was done about it.
  struct Watch {
    uint64_t last_progress = 0, next_check = 0;
    bool published = false, reported = false;
  };

  Progress(Comm& c, const std::vector<Call>& cs)
      : comm(c), seg(*c.seg_), calls(cs), coll_count(&c.colls_) {}
  void build();
  void build_collective(size_t i);
  Result go();
  bool watch_operation(Watch& w, uint64_t now);
  bool watch_bootstrap(Watch& w, uint64_t now);
  bool step(Item& it);
  bool post(Item& it);
  bool match(Item& it);
  bool move(Item& it);
  void finish();
  std::string call_text(const Item& it, uint64_t k) const;
  std::string blocked_text(uint64_t* waits_for) const;
  bool peers_gone();
};

void Progress::build() {
  scratch.resize(calls.size());
  coll_index.resize(calls.size());
  const int me = comm.rank_;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const uint64_t bytes = c.count * elem_size(c.dtype);
    if (c.kind == Kind::send) {
      items.push_back({kP2p, me, c.peer, c.peer, kSendSide, i,
                       const_cast<unsigned char*>(static_cast<const unsigned char*>(c.send)),
                       bytes});
    } else if (c.kind == Kind::recv) {
      items.push_back(
          {kP2p, c.peer, me, c.peer, kRecvSide, i, static_cast<unsigned char*>(c.recv), bytes});
    } else {
      build_collective(i);
    }
  }
}

// All-gather: this rank's block goes to every peer and lands at `rank * count` in everyone's
// receive buffer. Reduce-scatter: block p of the send buffer goes to rank p, which combines the
// parts in rank order. A rank's own block is copied locally ("in place" when it already lies
// there, NCCL User Guide, In-place Operations).
void Progress::build_collective(size_t i) {
  const Call& c = calls[i];
  const int me = comm.rank_, n = comm.nranks_;
  const uint64_t bytes = c.count * elem_size(c.dtype);
  const auto* send = static_cast<const unsigned char*>(c.send);
  auto* recv = static_cast<unsigned char*>(c.recv);
  coll_index[i] = ++*coll_count;
  if (c.kind == Kind::reduce_scatter) {
    scratch[i].resize(bytes * n);
    if (bytes) std::memcpy(scratch[i].data() + me * bytes, send + me * bytes, bytes);
  } else if (bytes && recv + me * bytes != send) {
    std::memmove(recv + me * bytes, send, bytes);
  }
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    const unsigned char* out = c.kind == Kind::reduce_scatter ? send + p * bytes : send;
    unsigned char* in =
        c.kind == Kind::reduce_scatter ? scratch[i].data() + p * bytes : recv + p * bytes;
    items.push_back({coll_set, me, p, p, kSendSide, i, const_cast<unsigned char*>(out), bytes});
    items.push_back({coll_set, p, me, p, kRecvSide, i, in, bytes});
  }
}

std::string Progress::call_text(const Item& it, uint64_t k) const {
  const Call& c = calls[it.call];
  const std::string who = "rank " + std::to_string(comm.rank_) + "'s ";
  const std::string n = std::to_string(c.count) + " x " + type_name(c.dtype);
  if (it.set == kP2p) {
    return who + (it.side == kSendSide ? "ncclSend #" : "ncclRecv #") + std::to_string(k + 1) +
           (it.side == kSendSide ? " to rank " : " from rank ") + std::to_string(it.peer) + " (" +
           n + ")";
  }
  const std::string idx = std::to_string(coll_index[it.call]);
  if (it.set == kBoot) return who + boot_call + " (bootstrap allgather #" + idx + ")";
  if (c.kind == Kind::all_gather) return who + "ncclAllGather #" + idx + " (sendcount " + n + ")";
  return who + "ncclReduceScatter #" + idx + " (recvcount " + n + ", " + op_name(c.op) + ")";
}

bool Progress::post(Item& it) {
  // Calls to one peer run in order: this one waits for the earlier ones on its channel side.
  for (const Item& other : items) {
    if (&other == &it) break;
    if (other.set == it.set && other.src == it.src && other.dst == it.dst &&
        other.side == it.side && other.state != 3) {
      return false;
    }
  }
  Channel& ch = seg.channel(it.set, it.src, it.dst);
  it.k = ch.posted[it.side].load(std::memory_order_relaxed);
  fill_desc(&it.mine, it.k, calls[it.call], call_text(it, it.k));
  ch.desc[it.side][it.k % kDescs] = it.mine;
  ch.posted[it.side].store(it.k + 1, std::memory_order_release);
  it.state = 1;
  return true;
}

bool Progress::match(Item& it) {
  Channel& ch = seg.channel(it.set, it.src, it.dst);
  const int other = 1 - it.side;
  if (ch.posted[other].load(std::memory_order_acquire) <= it.k) return false;
  const Desc theirs = ch.desc[other][it.k % kDescs];
  const bool p2p = it.set == kP2p;
  const bool same = theirs.count == it.mine.count && theirs.dtype == it.mine.dtype &&
                    (p2p || (theirs.kind == it.mine.kind && theirs.op == it.mine.op));
  if (!same) {
    failure = std::string(it.mine.call) + " meets " + theirs.call + ": " +
              (p2p ? "a send and its receive must have the same count and data type (NCCL "
                     "User Guide, Point-to-point communication)"
                   : "every rank must make the same collective calls in the same order, with "
                     "the same count, data type and operator (NCCL User Guide, Collective "
                     "Operations)");
    failed = kInvalidUsage;
    return false;
  }
  it.state = 2;
  return true;
}

bool Progress::move(Item& it) {
  Channel& ch = seg.channel(it.set, it.src, it.dst);
  unsigned char* ring = seg.ring_of(it.set, it.src, it.dst);
  bool any = false;
  while (it.moved < it.bytes) {
    const uint64_t produced = ch.produced.load(std::memory_order_acquire);
    const uint64_t consumed = ch.consumed.load(std::memory_order_acquire);
    const uint64_t at = it.side == kSendSide ? produced : consumed;
    const uint64_t ready =
        it.side == kSendSide ? seg.ring - (produced - consumed) : produced - consumed;
    const uint64_t n = std::min({ready, it.bytes - it.moved, seg.ring - at % seg.ring});
    if (n == 0) break;
    if (it.side == kSendSide) {
      std::memcpy(ring + at % seg.ring, it.buf + it.moved, n);
      ch.produced.store(produced + n, std::memory_order_release);
    } else {
      std::memcpy(it.buf + it.moved, ring + at % seg.ring, n);
      ch.consumed.store(consumed + n, std::memory_order_release);
    }
    it.moved += n;
    any = true;
  }
  if (it.moved == it.bytes) {
    it.state = 3;
    return true;
  }
  return any;
}

bool Progress::step(Item& it) {
  bool progressed = false;
  if (it.state == 0) progressed |= post(it);
  if (it.state == 1) progressed |= match(it);
  if (it.state == 2) progressed |= move(it);
  return progressed;
}

std::string Progress::blocked_text(uint64_t* waits_for) const {
  std::string text = "rank " + std::to_string(comm.rank_) + " (process " +
                     std::to_string(getpid()) + ") is blocked in a group of " +
                     std::to_string(calls.size()) + " call(s):";
  *waits_for = 0;
  for (const Item& it : items) {
    if (it.state == 3) continue;
    *waits_for |= uint64_t{1} << it.peer;
    const std::string peer = "rank " + std::to_string(it.peer);
    if (it.state == 0) {
      text += ' ';
      text += describe(calls[it.call]);
      text += " behind an earlier call to " + peer + ";";
    } else if (it.state == 1) {
      const std::string k = std::to_string(it.k + 1), me = std::to_string(comm.rank_);
      text += std::string(" ") + it.mine.call + ", waiting for " + peer +
              (it.set != kP2p         ? " to make the same collective;"
               : it.side == kSendSide ? " to post its ncclRecv #" + k + " from rank " + me + ";"
                                      : " to post its ncclSend #" + k + " to rank " + me + ";");
    } else {
      text += std::string(" ") + it.mine.call + ", matched, waiting for " + peer +
              (it.side == kSendSide ? " to receive the data;" : " to send the data;");
    }
  }
  return text;
}

// A peer that aborted, destroyed its communicator or exited will never make its call: the wait
// ends with ncclRemoteError ("A call failed possibly due to a network error or a remote process
// exiting prematurely", NCCL API, ncclResult_t) instead of hanging.
bool Progress::peers_gone() {
  uint64_t waits_for = 0;
  blocked_text(&waits_for);
  for (int p = 0; p < comm.nranks_; ++p) {
    if (!(waits_for >> p & 1) || p == comm.rank_) continue;
    const RankSlot& s = seg.slot(p);
    const int state = s.state.load(std::memory_order_acquire);
    const pid_t pid = s.pid.load(std::memory_order_relaxed);
    std::string why;
    if (state == kAborted) why = "aborted its communicator";
    if (state == kDestroyed) why = "destroyed its communicator";
    if (why.empty() && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) why = "exited";
    if (why.empty()) continue;
    failure = "rank " + std::to_string(p) + " (process " + std::to_string(pid) + ") " + why +
              " while rank " + std::to_string(comm.rank_) + " waits for it";
    failed = kRemoteError;
    return true;
  }
  return false;
}

// Reduce-scatter's parts are all here once its items are done: combine them in rank order.
void Progress::finish() {
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    if (c.kind != Kind::reduce_scatter || c.count == 0) continue;
    std::vector<const unsigned char*> parts;
    const uint64_t bytes = c.count * elem_size(c.dtype);
    for (int p = 0; p < comm.nranks_; ++p) parts.push_back(scratch[i].data() + p * bytes);
    reduce(c.dtype, c.op, parts, c.recv, c.count);
  }
}

// An operation's group: after kPublishAfterNs without progress it publishes what it is blocked in;
// past FOB_MODEL_DEADLOCK_S it looks for a cycle through it (once a check interval) and for peers
// gone. True: stop waiting.
bool Progress::watch_operation(Watch& w, uint64_t now) {
  RankSlot& slot = seg.slot(comm.rank_);
  if (!w.published && now - w.last_progress >= kPublishAfterNs) {
    uint64_t waits_for = 0;
    const std::string text = blocked_text(&waits_for);
    publish_blocked(slot, waits_for, text, w.last_progress);
    w.published = true;
  }
  const auto threshold = static_cast<uint64_t>(comm.settings_.deadlock_s * 1e9);
  if (!w.published || now - w.last_progress < threshold || now < w.next_check) return false;
  w.next_check = now + kCheckEveryNs;
  const std::vector<int> cycle = find_cycle(seg, comm.rank_, now, threshold);
  if (!cycle.empty() && !w.reported) {
    w.reported = true;
    comm.report("deadlock", describe_cycle(seg, cycle));
  }
  return peers_gone();
}

// A bootstrap allgather: every rank makes the same API call (ncclCommSplit, a communicator's
// init), so a rank that does not within join_s never will, as ncclCommInitRank's join rules it.
bool Progress::watch_bootstrap(Watch& w, uint64_t now) {
  if (now < w.next_check) return false;
  w.next_check = now + kCheckEveryNs;
  if (peers_gone()) return true;
  if (now - w.last_progress < static_cast<uint64_t>(comm.settings_.join_s * 1e9)) return false;
  uint64_t waits_for = 0;
  blocked_text(&waits_for);
  std::string missing;
  for (int p = 0; p < comm.nranks_; ++p) {
    if (waits_for >> p & 1) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
  }
  failure = boot_call + ": rank " + std::to_string(comm.rank_) + " waited " +
            std::to_string(static_cast<int>(comm.settings_.join_s)) + " s for rank(s) " + missing +
            " to make the same call (every rank of the communicator must)";
  failed = kSystemError;
  comm.report("deadlock", failure);
  return true;
}

Result Progress::go() {
  build();
  RankSlot& slot = seg.slot(comm.rank_);
  Watch w;
  w.last_progress = now_ns();
  int backoff_us = 0;
  while (failed == kSuccess) {
    bool progressed = false, done = true;
    for (Item& it : items) {
      progressed |= step(it);
      done &= it.state == 3;
      if (failed != kSuccess) break;
    }
    if (failed != kSuccess || done || comm.aborted_.load()) break;
    const uint64_t now = now_ns();
    if (progressed) {
      w.last_progress = now;
      if (w.published) clear_blocked(slot);
      w.published = false;
      backoff_us = 0;
      continue;
    }
    if (coll_set == kBoot ? watch_bootstrap(w, now) : watch_operation(w, now)) break;
    sleep_backoff(&backoff_us);
  }
  if (w.published) clear_blocked(slot);
  if (failed != kSuccess) {
    if (failed == kInvalidUsage) comm.report("nccl", failure);
    comm.fail(failed, failure);
    return failed;
  }
  if (!comm.aborted_.load()) finish();
  return kSuccess;
}

Result Comm::run(const std::vector<Call>& calls) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.load()) return kSuccess;
  if (async_.load() != kSuccess) return async_error();
  active_.fetch_add(1);
  Progress progress(*this, calls);
  const Result r = progress.go();
  active_.fetch_sub(1);
  return r;
}

Result Comm::bootstrap_allgather(const void* mine, size_t bytes, void* all,
                                 const std::string& call) {
  std::lock_guard<std::mutex> lock(boot_mu_);
  if (aborted_.load() || destroyed_.load()) return kInvalidUsage;
  const std::vector<Call> calls{make_call(Kind::all_gather, mine, all, bytes, DType::u8)};
  Progress progress(*this, calls);
  progress.coll_set = kBoot;
  progress.coll_count = &boots_;
  progress.boot_call = call;
  return progress.go();
}

}  // namespace fobnccl
