// A rank's communicator: joining, abort, destroy and its asynchronous error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "internal.h"

namespace fobnccl {
namespace {

// "ncclGetUniqueId should be called once when creating a communicator and the Id should be
// distributed to all ranks in the communicator before calling ncclCommInitRank" and
// ncclCommInitRank "implicitly synchronizes with other ranks" (NCCL API, ncclCommInitRank,
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/comms.html): join waits for all.
bool wait_for_all(const Segment& seg, double limit_s) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(limit_s * 1e9);
  int backoff_us = 1;
  while (seg.header()->joined.load(std::memory_order_acquire) < seg.nranks) {
    if (now_ns() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(backoff_us));
    backoff_us = std::min(backoff_us * 2, 2000);
  }
  return true;
}

std::string missing_ranks(const Segment& seg) {
  std::string text;
  for (int r = 0; r < seg.nranks; ++r) {
    if (seg.slot(r).state.load() == kEmpty) text += (text.empty() ? "" : ", ") + std::to_string(r);
  }
  return text;
}

}  // namespace

std::shared_ptr<Comm> Comm::join(const Id& id, int nranks, int rank, const Settings& settings,
                                 Result* result, std::string* why) {
  // "rank must be between 0 and nranks-1" (NCCL API, ncclCommInitRank).
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    *why = "ncclCommInitRank: rank " + std::to_string(rank) + " of nranks " +
           std::to_string(nranks) + ": rank must lie in [0, nranks) and the model takes up to " +
           std::to_string(kMaxRanks) + " ranks";
    *result = kInvalidArgument;
    return nullptr;
  }
  std::shared_ptr<Segment> seg = open_segment(id, nranks, rank, result, why);
  if (!seg) return nullptr;
  std::shared_ptr<Comm> comm(new Comm());
  comm->seg_ = seg;
  comm->rank_ = rank;
  comm->nranks_ = nranks;
  comm->settings_ = settings;
  if (!wait_for_all(*seg, settings.join_s)) {
    comm->report("deadlock", "ncclCommInitRank: rank " + std::to_string(rank) + " waited " +
                                 std::to_string(static_cast<int>(settings.join_s)) +
                                 " s for rank(s) " + missing_ranks(*seg) + " of " +
                                 std::to_string(nranks) + " to join");
    seg->slot(rank).state.store(kDestroyed);
    *why = "ranks " + missing_ranks(*seg) + " never joined";
    *result = kSystemError;
    return nullptr;
  }
  // Everyone has it mapped: the name is no longer needed, and nothing is left behind.
  unlink(seg->path.c_str());
  *result = kSuccess;
  return comm;
}

Comm::~Comm() {
  if (seg_ && seg_->slot(rank_).state.load() == kJoined) seg_->slot(rank_).state.store(kDestroyed);
}

// "ncclCommAbort: Frees resources associated with communicator object and aborts any
// uncompleted operations" (NCCL API, ncclCommAbort): run()s in progress see the flag within a
// millisecond and return; this waits for them (bounded), so that nothing runs on afterwards.
void Comm::abort() {
  aborted_.store(true);
  seg_->slot(rank_).state.store(kAborted);
  const uint64_t deadline = now_ns() + 10'000'000'000ull;
  while (active_.load() > 0 && now_ns() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void Comm::destroy() {
  destroyed_.store(true);
  int32_t joined = kJoined;
  seg_->slot(rank_).state.compare_exchange_strong(joined, kDestroyed);
}

std::string Comm::async_text() const {
  std::lock_guard<std::mutex> lock(text_mu_);
  return async_text_;
}

void Comm::fail(Result r, const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(text_mu_);
    if (async_text_.empty()) async_text_ = text;
  }
  int expected = kSuccess;
  async_.compare_exchange_strong(expected, r);
  // A mismatch is a violation, reported already; a peer gone is only an error, said here.
  if (r != kInvalidUsage)
    std::fprintf(stderr, "[cuda model nccl] rank %d: %s\n", rank_, text.c_str());
}

void Comm::report(const std::string& rule, const std::string& text) const {
  if (settings_.report) {
    settings_.report(rule, text);
  } else {
    std::fprintf(stderr, "[cuda model] %s: %s\n", rule.c_str(), text.c_str());
  }
}

}  // namespace fobnccl
