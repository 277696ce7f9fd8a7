// The rule "race": two accesses to the same byte, at least one a write, by ops that no
// happens-before edge orders. Edges come from program order only (the vector clocks each op
// took when it was enqueued), never from when the model's threads ran, so the verdict does not
// depend on scheduling. Per byte range the detector keeps the last write and the reads since
// (one per agent: a later read of the same agent is ordered after an earlier one).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "internal.h"

namespace fobmodel::detail {
namespace {

struct Access {
  uint32_t agent = 0;
  uint64_t tick = 0;
  std::shared_ptr<const OpIdentity> who;
  bool write = false;
};

struct Segment {
  uintptr_t end = 0;
  std::optional<Access> last_write;
  std::vector<Access> reads;
};

struct Detector {
  std::mutex mutex;
  std::map<uintptr_t, Segment> segments;
  std::set<std::pair<const OpIdentity*, const OpIdentity*>> reported;

  // Splits so that a segment starts at `at` (if one covers it).
  void split(uintptr_t at) {
    auto it = segments.upper_bound(at);
    if (it == segments.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    Segment right = it->second;
    it->second.end = at;
    segments.emplace(at, std::move(right));
  }

  // Makes [begin, end) covered exactly by segments, creating empty ones in the gaps.
  void cover(uintptr_t begin, uintptr_t end) {
    split(begin);
    split(end);
    uintptr_t at = begin;
    auto it = segments.lower_bound(begin);
    while (at < end) {
      if (it == segments.end() || it->first > at) {
        const uintptr_t gap_end = it == segments.end() ? end : std::min(end, it->first);
        it = segments.emplace_hint(it, at, Segment{gap_end, std::nullopt, {}});
      }
      at = it->second.end;
      ++it;
    }
  }
};

Detector& detector() {
  static Detector* instance = new Detector;  // outlives the stream threads at exit
  return *instance;
}

std::string describe(const OpIdentity& who) {
  return who.name + " (stream " + who.stream + ", task \"" + who.task + "\")";
}

std::string verb(const Access& access) {
  return access.write ? " writes " : " reads ";
}

// Names the pair in enqueue order, whichever of the two happened to run second.
void report(Detector& d, const Access& one, const Access& other, uintptr_t at) {
  const bool in_order = one.who->sequence <= other.who->sequence;
  const Access& first = in_order ? one : other;
  const Access& second = in_order ? other : one;
  if (!d.reported.emplace(first.who.get(), second.who.get()).second) return;
  violation("race", describe(*first.who) + verb(first) +
                        pointer_text(reinterpret_cast<const void*>(at)) + " and " +
                        describe(*second.who) + verb(second) +
                        "it, and no stream order, event wait, graph edge or host synchronisation "
                        "orders the two");
}

}  // namespace

void check_access(const QueuedOp& op, uintptr_t begin, uintptr_t end, bool write) {
  if (begin >= end) return;
  check_shared_access(op, begin, end, write);
  Detector& d = detector();
  std::lock_guard lock(d.mutex);
  d.cover(begin, end);
  const Access current{op.agent, op.clock.at(op.agent), op.identity, write};
  const auto ordered_before = [&](const Access& earlier) {
    return earlier.tick <= op.clock.at(earlier.agent);
  };
  for (auto it = d.segments.lower_bound(begin); it != d.segments.end() && it->first < end; ++it) {
    Segment& segment = it->second;
    if (segment.last_write && !ordered_before(*segment.last_write)) {
      report(d, *segment.last_write, current, it->first);
    }
    if (write) {
      for (const Access& read : segment.reads) {
        if (!ordered_before(read)) report(d, read, current, it->first);
      }
      segment.last_write = current;
      segment.reads.clear();
      continue;
    }
    const auto same_agent = std::find_if(segment.reads.begin(), segment.reads.end(),
                                         [&](const Access& a) { return a.agent == op.agent; });
    if (same_agent != segment.reads.end()) {
      *same_agent = current;
    } else {
      segment.reads.push_back(current);
    }
  }
}

void check_footprint(const QueuedOp& op, const Footprint& footprint) {
  if (footprint.width == 0) return;
  const uintptr_t base = reinterpret_cast<uintptr_t>(footprint.base);
  if (footprint.pitch == footprint.width || footprint.rows == 1) {
    check_access(op, base, base + footprint.width * footprint.rows, footprint.write);
    return;
  }
  for (size_t row = 0; row < footprint.rows; ++row) {
    const uintptr_t start = base + row * footprint.pitch;
    check_access(op, start, start + footprint.width, footprint.write);
  }
}

// Freed memory: what the next allocation at these addresses does is not ordered after what the
// old one saw (cudaFree synchronised the device).
void forget_accesses(uintptr_t begin, uintptr_t end) {
  Detector& d = detector();
  std::lock_guard lock(d.mutex);
  d.split(begin);
  d.split(end);
  d.segments.erase(d.segments.lower_bound(begin), d.segments.lower_bound(end));
}

}  // namespace fobmodel::detail
