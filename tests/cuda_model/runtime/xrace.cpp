// The rule "race" across processes: accesses to device memory shared through CUDA IPC, by ops of
// two processes, that no flag orders. Each process's own detector (race.cpp) sees only its own
// ops, so the accesses to an exported allocation are kept in its exporter's shared table
// (shared_table.h), as global agents (process id, stream) and ticks of the ops' clocks.
//
// The only order across processes is a flag: a cuStreamWriteValue32 publishes, with its value,
// what its op is ordered after (its own process's ticks, from its enqueue clock, and what that
// process learned from flags); a satisfied cuStreamWaitValue32 acquires what the write it
// observed published, as knowledge of its stream at its tick. An op knows what every wait it is
// ordered after (by its enqueue clock: stream order, events, host synchronisation) acquired.
// Execution respects the local edges, so such a wait has run before the op runs; a wait not
// ordered before it is never counted, however the threads ran: whether a pair races does not
// depend on scheduling. Within one process a memop wait still gives no edge (race.cpp).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "internal.h"
#include "shared_table.h"

namespace fobmodel::detail {
namespace {

using Known = std::map<uint64_t, uint64_t>;  // global agent -> tick
constexpr size_t kHistory = 4096;            // acquisitions kept per agent

// What the waits of each local agent acquired: (tick, everything acquired up to that tick).
struct Acquired {
  std::mutex mutex;
  std::map<uint32_t, std::vector<std::pair<uint64_t, Known>>> by_agent;
  std::set<std::string> reported;
  bool overflow_reported = false;
  VectorClock synced;  // what this process's host threads have synchronised with
  // The local agents whose ops have touched shared memory: the only ones whose ticks another
  // process can need, so the only ones a flag publishes. Threads come and go (a monitor per
  // case, an agent per opened handle) and would otherwise grow every publication without bound.
  std::set<uint32_t> accessors;
};

Acquired& acquired() {
  static Acquired* instance = new Acquired;  // outlives the stream threads at exit
  return *instance;
}

void join(Known& into, const Known& other) {
  for (const auto& [agent, tick] : other) into[agent] = std::max(into[agent], tick);
}

// What a point with `clock` knows of other processes: what the waits (and the opens of
// handles) it is ordered after acquired.
Known knowledge_at(const VectorClock& clock) {
  Known known;
  Acquired& a = acquired();
  std::lock_guard lock(a.mutex);
  for (const auto& [agent, history] : a.by_agent) {
    const uint64_t tick = clock.at(agent);
    auto it = std::upper_bound(history.begin(), history.end(), tick,
                               [](uint64_t t, const auto& entry) { return t < entry.first; });
    if (it != history.begin()) join(known, std::prev(it)->second);
  }
  return known;
}

Known knowledge_of(const QueuedOp& op) {
  return knowledge_at(op.clock);
}

// What a point publishes: the ticks in `clock` of its process's agents that have touched shared
// memory (an access of one is recorded before it runs anything ordered after it, so none is
// missed), and what that point acquired.
Known published_at(const VectorClock& clock) {
  Known known = knowledge_at(clock);
  Acquired& a = acquired();
  std::lock_guard lock(a.mutex);
  for (uint32_t agent : a.accessors) {
    if (agent < clock.ticks.size() && clock.ticks[agent] > 0) {
      known[global_agent(getpid(), agent)] = clock.ticks[agent];
    }
  }
  return known;
}

// The shared word or range an address names: its owner's table, device and arena offset.
struct Owner {
  ExportTable* table = nullptr;
  int pid = 0;
  int device = 0;
  uint64_t offset = 0;
};

bool owner_of(const void* pointer, Owner* out) {
  if (imported_owner(pointer, &out->pid, &out->device, &out->offset)) {
    out->table = table_of(out->pid);
  } else if (exported_at(pointer, &out->device, &out->offset)) {
    out->pid = getpid();
    out->table = own_table(false);
  }
  return out->table != nullptr;
}

std::string process_text(int pid) {
  std::string text = "process " + std::to_string(pid);
  if (pid != getpid()) return text;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* rank = std::getenv(name)) return text + " = rank " + rank;
  }
  return text;
}

void setup_once(const std::string& text) {
  Acquired& a = acquired();
  {
    std::lock_guard lock(a.mutex);
    if (a.overflow_reported) return;
    a.overflow_reported = true;
  }
  violation("setup", text);
}

bool store(Knowledge& into, const Known& known) {
  if (known.size() > static_cast<size_t>(kMaxKnown)) {
    setup_once("a point of one process ordered after more than " + std::to_string(kMaxKnown) +
               " streams of processes sharing memory through CUDA IPC");
    return false;
  }
  into.count = 0;
  for (const auto& [agent, tick] : known) into.known[into.count++] = {agent, tick};
  return true;
}

FlagWord* flag_word(ExportTable& table, const Owner& owner, bool create) {
  const uint64_t key = (static_cast<uint64_t>(owner.device) << 48 | owner.offset) + 1;
  for (FlagWord& word : table.flags) {
    if (word.key == key) return &word;
  }
  if (!create) return nullptr;
  for (FlagWord& word : table.flags) {
    if (word.key != 0) continue;
    word = FlagWord{};
    word.key = key;
    return &word;
  }
  setup_once("more than " + std::to_string(kMaxFlagWords) +
             " flag words in one process's shared memory");
  return nullptr;
}

// The write a wait that saw `seen` synchronised with: for a cyclic >= the one that wrote the
// value waited for (else the oldest that satisfies it), so that a later write a slow waiter
// happened to see orders no more than the one it waited for; otherwise the newest write of the
// value seen.
const FlagWrite* observed_write(const FlagWord& word, uint32_t wanted, uint32_t seen, bool geq) {
  const FlagWrite* best = nullptr;
  for (const FlagWrite& write : word.writes) {
    if (write.order == 0) continue;
    if (geq) {
      const bool exact = write.value == wanted;
      const bool satisfies = static_cast<int32_t>(write.value - wanted) >= 0;
      const bool best_exact = best != nullptr && best->value == wanted;
      if (!satisfies || best_exact) continue;
      if (exact || best == nullptr || write.order < best->order) best = &write;
    } else if (write.value == seen && (best == nullptr || write.order > best->order)) {
      best = &write;
    }
  }
  return best;
}

std::string who_text(const QueuedOp& op) {
  return op.identity->name + " (" + process_text(getpid()) + ", stream " + op.identity->stream +
         ", task \"" + op.identity->task + "\")";
}

bool overlaps(const ShadowRecord& r, uint64_t begin, uint64_t end) {
  return r.begin < end && begin < r.end;
}

struct Access {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool write = false;
  uint64_t agent = 0;
  uint64_t tick = 0;
};

// Whether `record` is ordered before the access of `op`: by the local clock for this process's
// own records, by what flags taught it for another's.
bool ordered(const ShadowRecord& record, const QueuedOp& op, const Known& known) {
  if (agent_pid(record.agent) == getpid()) {
    return record.tick <= op.clock.at(static_cast<uint32_t>(record.agent & 0xffffffffu));
  }
  const auto it = known.find(record.agent);
  return it != known.end() && record.tick <= it->second;
}

void report(const ShadowRecord& earlier, const QueuedOp& op, const Access& access,
            const Owner& owner) {
  const std::string first = earlier.who;
  const std::string second = who_text(op);
  {
    Acquired& a = acquired();
    std::lock_guard lock(a.mutex);
    if (!a.reported.insert(first + '\n' + second).second) return;
  }
  const uint64_t at = std::max(earlier.begin, access.begin);
  violation("race", first + (earlier.write ? " writes" : " reads") + " offset " +
                        std::to_string(at) + " of device " + std::to_string(owner.device) +
                        " memory of " + process_text(owner.pid) + " and " + second +
                        (access.write ? " writes" : " reads") +
                        " it; no flag wait (cuStreamWriteValue32 after the one, "
                        "cuStreamWaitValue32 before the other) orders them across the processes");
}

// Drops the records the new access supersedes (covered by it and ordered before it: a write
// supersedes both, a read only reads), then appends it.
void record(ExportEntry& entry, const QueuedOp& op, const Access& access, const Known& known) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < entry.records; ++i) {
    const ShadowRecord& r = entry.shadow[i];
    const bool covered = access.begin <= r.begin && r.end <= access.end;
    if (covered && (access.write || !r.write) && ordered(r, op, known)) continue;
    if (kept != i) entry.shadow[kept] = r;
    ++kept;
  }
  entry.records = kept;
  if (kept == kMaxRecords) {
    setup_once("more than " + std::to_string(kMaxRecords) +
               " unordered accesses to one allocation shared through CUDA IPC");
    return;
  }
  ShadowRecord& r = entry.shadow[entry.records++];
  r = ShadowRecord{access.begin, access.end, access.agent, access.tick, access.write, {}};
  std::strncpy(r.who, who_text(op).c_str(), sizeof r.who - 1);
}

ExportEntry* entry_at(ExportTable& table, const Owner& owner) {
  for (ExportEntry& entry : table.entries) {
    if (entry.generation != 0 && entry.device == owner.device && owner.offset >= entry.offset &&
        owner.offset < entry.offset + entry.size) {
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace

void check_shared_access(const QueuedOp& op, uintptr_t begin, uintptr_t end, bool write) {
  if (op.op.flag || begin >= end || !ipc_active()) return;
  Owner owner;
  if (!owner_of(reinterpret_cast<const void*>(begin), &owner)) return;
  const Known known = knowledge_of(op);
  {
    Acquired& a = acquired();
    std::lock_guard lock(a.mutex);
    a.accessors.insert(op.agent);
  }
  TableLock lock(*owner.table);
  ExportEntry* entry = entry_at(*owner.table, owner);
  if (entry == nullptr) return;
  const uint64_t first = owner.offset - entry->offset;
  const Access access{first, std::min<uint64_t>(first + (end - begin), entry->size), write,
                      global_agent(getpid(), op.agent), op.clock.at(op.agent)};
  for (uint32_t i = 0; i < entry->records; ++i) {
    const ShadowRecord& r = entry->shadow[i];
    if (agent_pid(r.agent) == getpid() || !overlaps(r, access.begin, access.end)) continue;
    if ((r.write || write) && !ordered(r, op, known)) report(r, op, access, owner);
  }
  record(*entry, op, access, known);
}

// A host thread synchronised with device work (under model_mutex()): the process's exports
// publish it. Processes talk through the host (MPI, pipes) in ways the model cannot see, so an
// importer opening a handle takes this as ordered before everything it does with the memory:
// what the exporter synchronised with before it handed the handle over is then ordered, as it is
// on a GPU.
void note_host_synchronised() {
  if (!ipc_active()) return;
  ExportTable* table = own_table(false);
  if (table == nullptr) return;
  Known known;
  {
    Acquired& a = acquired();
    std::lock_guard lock(a.mutex);
    a.synced.join(host_clock());
  }
  known = published_at(acquired().synced);
  TableLock lock(*table);
  store(table->synced, known);
}

// cudaIpcOpenMemHandle succeeded: what the exporter published becomes known to this host thread
// (through an agent of its own, ticked once in the thread's clock) and so to every op it, or a
// thread that synchronises with it, enqueues after.
void acquire_published(const Knowledge& published) {
  Known known;
  for (uint32_t i = 0; i < published.count && i < kMaxKnown; ++i) {
    known[published.known[i].agent] = published.known[i].tick;
  }
  const uint32_t agent = new_agent();
  {
    Acquired& a = acquired();
    std::lock_guard lock(a.mutex);
    a.by_agent[agent].emplace_back(1, std::move(known));
  }
  std::lock_guard lock(model_mutex());
  VectorClock& host = host_clock();
  if (host.ticks.size() <= agent) host.ticks.resize(agent + 1);
  host.ticks[agent] = 1;
}

}  // namespace fobmodel::detail

namespace fobmodel {

void flag_written(const void* word, uint32_t value) {
  using namespace detail;
  const QueuedOp* op = running_queued_op();
  Owner owner;
  if (op == nullptr || !ipc_active() || !owner_of(word, &owner)) return;
  const Known known = published_at(op->clock);
  TableLock lock(*owner.table);
  FlagWord* slot = flag_word(*owner.table, owner, true);
  if (slot == nullptr) return;
  // The oldest of the word's last writes makes room.
  FlagWrite* write =
      std::min_element(std::begin(slot->writes), std::end(slot->writes),
                       [](const FlagWrite& x, const FlagWrite& y) { return x.order < y.order; });
  if (!store(write->knowledge, known)) return;
  write->order = ++slot->next_order;
  write->value = value;
}

void flag_observed(const void* word, uint32_t wanted, uint32_t seen, bool geq) {
  using namespace detail;
  const QueuedOp* op = running_queued_op();
  Owner owner;
  if (op == nullptr || !ipc_active() || !owner_of(word, &owner)) return;
  Known known;
  {
    TableLock lock(*owner.table);
    const FlagWord* slot = flag_word(*owner.table, owner, false);
    const FlagWrite* write = slot ? observed_write(*slot, wanted, seen, geq) : nullptr;
    if (write == nullptr) return;
    for (uint32_t i = 0; i < write->knowledge.count; ++i) {
      known[write->knowledge.known[i].agent] = write->knowledge.known[i].tick;
    }
  }
  const uint64_t tick = op->clock.at(op->agent);
  Acquired& a = acquired();
  std::lock_guard lock(a.mutex);
  auto& history = a.by_agent[op->agent];
  // Waits of one agent run in tick order; each entry holds everything acquired up to it.
  if (!history.empty()) join(known, history.back().second);
  history.emplace_back(tick, std::move(known));
  // Bounded memory: the oldest entries go, and a point ordered after this agent but older than
  // all that are left is taken to know what the oldest left knows (more than it did: a race that
  // far back can be missed, none is invented).
  if (history.size() > kHistory) {
    history.erase(history.begin(), history.begin() + kHistory / 2);
    history.front().first = 1;
  }
}

}  // namespace fobmodel
