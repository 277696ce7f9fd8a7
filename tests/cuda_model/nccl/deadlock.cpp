// Deadlock detection. A GPU hangs when NCCL calls wait for each other in a cycle ("Point-to-point
// calls within a group will be blocking until that group of calls completes ... It is therefore
// important to merge calls that need to progress concurrently to avoid deadlocks", NCCL User
// Guide, Point-to-point communication,
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/p2p.html). The model hangs
// the same way, and every rank publishes in its slot what it is blocked in and for which ranks,
// so that a rank stalled past FOB_MODEL_DEADLOCK_S finds the cycle and names every call on it.
// Only ranks blocked inside NCCL form a cycle: a rank busy elsewhere is not reported (the
// backend's --timeout covers waits outside NCCL).
#include <algorithm>
#include <cstring>
#include <functional>

#include "internal.h"

namespace fobnccl {

void publish_blocked(RankSlot& slot, uint64_t waits_for, const std::string& text,
                     uint64_t stalled_since) {
  // A seqlock: readers retry while the version is odd or changed under them.
  const uint32_t v = slot.version.load(std::memory_order_relaxed);
  slot.version.store(v + 1, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  const size_t n = std::min(text.size(), kBlockedText - 1);
  std::memcpy(slot.text, text.data(), n);
  slot.text[n] = '\0';
  slot.waits_for.store(waits_for, std::memory_order_relaxed);
  slot.stalled_since_ns.store(stalled_since, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.version.store(v + 2, std::memory_order_release);
  slot.waiting.store(1, std::memory_order_release);
}

void clear_blocked(RankSlot& slot) {
  slot.waiting.store(0, std::memory_order_release);
}

std::string read_blocked(const RankSlot& slot) {
  char copy[kBlockedText];
  for (int tries = 0; tries < 1000; ++tries) {
    const uint32_t v = slot.version.load(std::memory_order_acquire);
    if (v & 1) continue;
    std::memcpy(copy, slot.text, sizeof copy);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.version.load(std::memory_order_acquire) == v) {
      copy[kBlockedText - 1] = '\0';
      return copy;
    }
  }
  return "(changing)";
}

std::vector<int> find_cycle(const Segment& seg, int me, uint64_t now, uint64_t threshold_ns) {
  const int n = seg.nranks;
  auto stalled = [&](int r) {
    const RankSlot& s = seg.slot(r);
    if (!s.waiting.load(std::memory_order_acquire)) return false;
    const uint64_t since = s.stalled_since_ns.load(std::memory_order_relaxed);
    return now > since && now - since >= threshold_ns;
  };
  if (!stalled(me)) return {};
  // Depth-first from `me` over stalled ranks; the first path back to `me` is the cycle.
  std::vector<int> path{me};
  std::vector<bool> seen(n, false);
  seen[me] = true;
  std::function<bool(int)> dfs = [&](int r) {
    const uint64_t mask = seg.slot(r).waits_for.load(std::memory_order_relaxed);
    for (int p = 0; p < n; ++p) {
      if (!(mask >> p & 1)) continue;
      if (p == me) return true;
      if (seen[p] || !stalled(p)) continue;
      seen[p] = true;
      path.push_back(p);
      if (dfs(p)) return true;
      path.pop_back();
    }
    return false;
  };
  return dfs(me) ? path : std::vector<int>{};
}

std::string describe_cycle(const Segment& seg, const std::vector<int>& cycle) {
  std::string ranks;
  for (int r : cycle) ranks += std::to_string(r) + " -> ";
  ranks += std::to_string(cycle.front());
  std::string text = cycle.size() == 1
                         ? "rank " + std::to_string(cycle.front()) + " waits for itself"
                         : "ranks wait for each other in a cycle (" + ranks + ")";
  text +=
      " and no call can progress, as on a GPU (NCCL User Guide, Point-to-point "
      "communication: calls that must progress concurrently belong in one "
      "ncclGroupStart/ncclGroupEnd group):";
  for (int r : cycle) text += "\n  " + read_blocked(seg.slot(r));
  return text;
}

}  // namespace fobnccl
