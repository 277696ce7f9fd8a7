// The rendezvous file's layout, shared by every rank of a communicator through MAP_SHARED: a
// header, one slot per rank (who joined, what it is blocked in), and for every ordered pair of
// ranks kSets channels (point-to-point, collective, bootstrap), each a queue of call descriptors
// and a byte ring that carries the data.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine.h"

namespace fobnccl {

constexpr int kMaxRanks = 64;
// Channel sets: point-to-point, the operations' collectives, and the bootstrap's collectives.
constexpr int kSets = 3;
constexpr int kDescs = 4;  // a side posts call k+1 only when call k is done, so 2 would do
constexpr size_t kCallText = 96;
constexpr size_t kBlockedText = 1024;

static_assert(std::atomic<uint64_t>::is_always_lock_free, "atomics across processes");
static_assert(std::atomic<int32_t>::is_always_lock_free, "atomics across processes");

// What one side of a channel posted: the call and its number on the channel.
struct Desc {
  uint64_t seq;
  uint64_t count;
  int32_t kind, dtype, op, pad;
  char call[kCallText];
};

enum Side { kSendSide = 0, kRecvSide = 1 };

struct Channel {
  std::atomic<uint64_t> posted[2];  // calls posted by the sender and by the receiver
  std::atomic<uint64_t> produced;   // bytes written into the ring, ever
  std::atomic<uint64_t> consumed;   // bytes read out of it, ever
  Desc desc[2][kDescs];
};

enum SlotState : int32_t { kEmpty = 0, kJoined = 1, kDestroyed = 2, kAborted = 3 };

struct RankSlot {
  std::atomic<int32_t> pid;
  std::atomic<int32_t> state;
  // What the rank is blocked in, for a waiting rank to describe a cycle: set while a run() has
  // made no progress, with the time it last progressed and the ranks it waits for.
  std::atomic<int32_t> waiting;
  std::atomic<uint32_t> version;  // odd while `text` is being written
  std::atomic<uint64_t> stalled_since_ns;
  std::atomic<uint64_t> waits_for;  // bit r: waits for rank r
  char text[kBlockedText];
};

struct Header {
  char magic[16];
  // nranks + 256 * (rank + 1), set by the first rank to join: a mismatch names that rank.
  std::atomic<int32_t> nranks;
  std::atomic<int32_t> joined;
  std::atomic<uint64_t> ring_bytes;
  RankSlot ranks[kMaxRanks];
};

// A mapped rendezvous file.
struct Segment {
  ~Segment();
  std::string path;
  unsigned char* base = nullptr;
  size_t size = 0;
  int nranks = 0;
  size_t ring = 0;

  Header* header() const { return reinterpret_cast<Header*>(base); }
  RankSlot& slot(int r) const { return header()->ranks[r]; }
  // set 0: point-to-point, 1: collectives, 2: bootstrap collectives.
  Channel& channel(int set, int src, int dst) const;
  unsigned char* ring_of(int set, int src, int dst) const;
};

// Sizes of the parts, for a communicator of n ranks.
size_t ring_bytes_for(int nranks);
size_t segment_bytes(int nranks, size_t ring);

// The id's layout: a magic string, then the file's path.
constexpr char kIdMagic[] = "fobnccl-model-1";

// Opens the file the id names (never through a symlink, only a regular file this user owns),
// settles nranks (a mismatch names both ranks), takes `rank`'s slot (a duplicate names both
// processes) and maps it whole.
std::shared_ptr<Segment> open_segment(const Id& id, int nranks, int rank, Result* result,
                                      std::string* why);

uint64_t now_ns();

}  // namespace fobnccl
