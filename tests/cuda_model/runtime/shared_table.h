// The shared table of one process that exports device memory (CUDA IPC, ipc.cpp): a small
// shared memory file the importers map through /proc/<pid>/fd, holding what both sides must see
// — which allocations are exported and who has them open (the lifetime rule), and the
// cross-process race detector's state (xrace.cpp): the accesses to each exported allocation and
// the clocks flag writes published. Fixed size; running out is the rule "setup".
#pragma once

#include <pthread.h>

#include <cstdint>

namespace fobmodel::detail {

inline constexpr uint32_t kTableMagic = 0x46424d54;  // "FBMT"
inline constexpr int kMaxExports = 256;
inline constexpr int kMaxImporters = 16;
inline constexpr int kMaxKnown = 64;
inline constexpr int kFlagHistory = 16;
inline constexpr int kMaxFlagWords = 256;
inline constexpr int kMaxRecords = 512;
inline constexpr int kWhoBytes = 192;

// A process-wide agent: the process id in the high half, the local agent (stream) in the low.
inline uint64_t global_agent(int pid, uint32_t agent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pid)) << 32) | agent;
}
inline int agent_pid(uint64_t agent) {
  return static_cast<int>(agent >> 32);
}

struct ImporterSlot {
  int32_t pid = 0;
  uint32_t opens = 0;
};

// One access to an exported allocation: the range (offsets in it), the agent and its tick, and
// the op as a report names it.
struct ShadowRecord {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t agent = 0;
  uint64_t tick = 0;
  uint32_t write = 0;
  char who[kWhoBytes] = {};
};

struct ExportEntry {
  uint64_t offset = 0;  // of the allocation's base in its device arena
  uint64_t size = 0;
  uint64_t generation = 0;  // 0: the slot is free
  int32_t device = 0;
  uint32_t records = 0;
  ImporterSlot importers[kMaxImporters];
  ShadowRecord shadow[kMaxRecords];
};

// What an agent knows of other processes' agents: their ticks it is ordered after.
struct Knowledge {
  uint32_t count = 0;
  struct Known {
    uint64_t agent = 0;
    uint64_t tick = 0;
  } known[kMaxKnown];
};

struct FlagWrite {
  uint64_t order = 0;  // 0: empty
  uint32_t value = 0;
  Knowledge knowledge;
};

// A flag word of one of the owner's allocations: the last writes' values and clocks.
struct FlagWord {
  uint64_t key = 0;  // 0: free; else device << 48 | arena offset, plus one
  uint64_t next_order = 0;
  FlagWrite writes[kFlagHistory];
};

struct ExportTable {
  uint32_t magic = 0;
  pthread_mutex_t mutex;
  uint64_t next_generation = 0;
  // What the exporter's host threads last synchronised with: an importer acquires it at open.
  Knowledge synced;
  ExportEntry entries[kMaxExports];
  FlagWord flags[kMaxFlagWords];
};

// The process-shared, robust lock of a table: a process that died holding it leaves it usable.
class TableLock {
 public:
  explicit TableLock(ExportTable& table);
  ~TableLock();
  TableLock(const TableLock&) = delete;
  TableLock& operator=(const TableLock&) = delete;

 private:
  ExportTable& table_;
};

// The table of the process that owns `pid`'s memory: this process's own (created at the first
// export) or an exporter's, mapped at its first import. Null when there is none.
ExportTable* own_table(bool create);
ExportTable* table_of(int pid);

}  // namespace fobmodel::detail
