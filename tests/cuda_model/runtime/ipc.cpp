// CUDA IPC of device memory (CUDA Runtime API, Device Management: cudaIpcGetMemHandle,
// cudaIpcOpenMemHandle, cudaIpcCloseMemHandle). A device arena is a shared memory file
// (memory.cpp); a handle names the exporter's process, the file's descriptor there, and the
// allocation; the importer opens the file through /proc/<pid>/fd and maps the allocation's pages
// into its import region. The exporter's shared table (shared_table.h) tells both sides which
// allocations are exported and who has them open.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "internal.h"
#include "memory.h"
#include "shared_table.h"

namespace fobmodel::detail {
namespace {

constexpr uint32_t kHandleMagic = 0x46424950;  // "FBIP"

struct Handle {
  uint32_t magic = 0;
  int32_t pid = 0;
  int32_t device = 0;
  int32_t arena_fd = -1;
  int32_t table_fd = -1;
  uint32_t reserved = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t generation = 0;
};
static_assert(sizeof(Handle) <= CUDA_IPC_HANDLE_SIZE);

struct Import {
  int pid = 0;
  int device = 0;
  uint64_t offset = 0;
  uint64_t generation = 0;
  uintptr_t map_at = 0;
  size_t map_length = 0;
  size_t size = 0;
  uint32_t references = 0;
};

struct Ipc {
  std::mutex mutex;
  ExportTable* own = nullptr;
  int own_fd = -1;
  std::map<int, ExportTable*> remote;   // exporters' tables, by process id
  std::map<uintptr_t, Import> imports;  // by the pointer cudaIpcOpenMemHandle returned
  Ipc();
};

// Set once this process exports or imports: until then no access needs the shared tables.
std::atomic<bool> active{false};

Ipc& ipc() {
  static Ipc* instance = new Ipc;  // outlives the stream threads at exit
  return *instance;
}

// A forked child is a process of its own: it has exported nothing and imported nothing (what it
// inherited mapped stays mapped, unknown to it).
void fork_prepare() {
  ipc().mutex.lock();
}
void fork_parent() {
  ipc().mutex.unlock();
}
void fork_child() {
  Ipc& state = ipc();
  if (state.own != nullptr) munmap(state.own, sizeof(ExportTable));
  if (state.own_fd >= 0) close(state.own_fd);
  state.own = nullptr;
  state.own_fd = -1;
  state.remote.clear();
  state.imports.clear();
  state.mutex.unlock();
}

Ipc::Ipc() {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

bool alive(int pid) {
  return kill(pid, 0) == 0 || errno == EPERM;
}

ExportTable* map_table(int fd) {
  void* at = mmap(nullptr, sizeof(ExportTable), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return at == MAP_FAILED ? nullptr : static_cast<ExportTable*>(at);
}

ExportTable* create_table(Ipc& state) {
  const int fd = memfd_create("fobmodel-ipc", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, sizeof(ExportTable)) != 0) {
    violation("setup", std::string("cannot create the IPC table: ") + std::strerror(errno));
    if (fd >= 0) close(fd);
    return nullptr;
  }
  ExportTable* table = map_table(fd);
  if (table == nullptr) {
    close(fd);
    return nullptr;
  }
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&table->mutex, &attributes);
  pthread_mutexattr_destroy(&attributes);
  table->magic = kTableMagic;
  active = true;
  state.own = table;
  state.own_fd = fd;
  return table;
}

// Opens another process's descriptor: "/proc/<pid>/fd/<fd>" reopens the file it names for a
// process of the same user.
int open_remote(int pid, int fd) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  return open(path.c_str(), O_RDWR | O_CLOEXEC);
}

ExportTable* remote_table(Ipc& state, int pid, int fd) {
  if (const auto it = state.remote.find(pid); it != state.remote.end()) return it->second;
  const int opened = open_remote(pid, fd);
  if (opened < 0) return nullptr;
  ExportTable* table = map_table(opened);
  close(opened);
  if (table == nullptr || table->magic != kTableMagic) return nullptr;
  state.remote[pid] = table;
  active = true;
  return table;
}

ExportEntry* find_entry(ExportTable& table, int device, uint64_t offset) {
  for (ExportEntry& entry : table.entries) {
    if (entry.generation != 0 && entry.device == device && entry.offset == offset) return &entry;
  }
  return nullptr;
}

ExportEntry* new_entry(ExportTable& table, int device, uint64_t offset, uint64_t size) {
  for (ExportEntry& entry : table.entries) {
    if (entry.generation != 0) continue;
    entry = ExportEntry{};
    entry.device = device;
    entry.offset = offset;
    entry.size = size;
    entry.generation = ++table.next_generation;
    return &entry;
  }
  violation("setup", "more than " + std::to_string(kMaxExports) +
                         " allocations exported with cudaIpcGetMemHandle at once");
  return nullptr;
}

std::string self() {
  return "process " + std::to_string(getpid());
}

cudaError_t ipc_error(cudaError_t error, const std::string& text) {
  violation("ipc", text);
  return error;
}

}  // namespace

TableLock::TableLock(ExportTable& table) : table_(table) {
  if (pthread_mutex_lock(&table_.mutex) == EOWNERDEAD) pthread_mutex_consistent(&table_.mutex);
}
TableLock::~TableLock() {
  pthread_mutex_unlock(&table_.mutex);
}

bool ipc_active() {
  return active.load(std::memory_order_relaxed);
}

ExportTable* own_table(bool create) {
  Ipc& state = ipc();
  std::lock_guard lock(state.mutex);
  return state.own != nullptr || !create ? state.own : create_table(state);
}

ExportTable* table_of(int pid) {
  Ipc& state = ipc();
  std::lock_guard lock(state.mutex);
  if (pid == getpid()) return state.own;
  const auto it = state.remote.find(pid);
  return it == state.remote.end() ? nullptr : it->second;
}

bool imported_owner(const void* pointer, int* pid, int* device, uint64_t* offset) {
  Ipc& state = ipc();
  std::lock_guard lock(state.mutex);
  const uintptr_t p = reinterpret_cast<uintptr_t>(pointer);
  auto it = state.imports.upper_bound(p);
  if (it == state.imports.begin()) return false;
  --it;
  if (p >= it->first + it->second.size) return false;
  *pid = it->second.pid;
  *device = it->second.device;
  *offset = it->second.offset + (p - it->first);
  return true;
}

// Whether `pointer` lies in an allocation of this process that is exported: its device and its
// offset in that device's arena.
bool exported_at(const void* pointer, int* device, uint64_t* offset) {
  ExportTable* table = own_table(false);
  if (table == nullptr) return false;
  const uintptr_t p = reinterpret_cast<uintptr_t>(pointer);
  {
    Memory& m = memory();
    std::lock_guard lock(m.mutex);
    const int d = m.device_of(p);
    if (d < 0) return false;
    *device = d;
    *offset = p - m.devices[static_cast<size_t>(d)]->base();
  }
  TableLock lock(*table);
  for (const ExportEntry& entry : table->entries) {
    if (entry.generation != 0 && entry.device == *device && *offset >= entry.offset &&
        *offset < entry.offset + entry.size) {
      return true;
    }
  }
  return false;
}

// cudaFree's IPC rules: imported memory is closed, not freed; an exported allocation that a
// living importer still has open is the lifetime rule.
cudaError_t ipc_before_free(void* pointer) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(pointer);
  Allocation allocation;
  uintptr_t arena_base = 0;
  {
    Memory& m = memory();
    std::lock_guard lock(m.mutex);
    const auto* found = m.find(p);
    if (found == nullptr || found->first != p) return cudaSuccess;
    allocation = found->second;
    if (!allocation.imported && allocation.device >= 0) {
      arena_base = m.devices[static_cast<size_t>(allocation.device)]->base();
    }
  }
  if (allocation.imported) {
    return ipc_error(cudaErrorInvalidValue,
                     "cudaFree(" + pointer_text(pointer) + ") on " + self() +
                         ": the memory was imported with cudaIpcOpenMemHandle from process " +
                         std::to_string(allocation.exporter_pid) +
                         "; close it with cudaIpcCloseMemHandle (\"Memory returned from "
                         "cudaIpcOpenMemHandle must be freed with cudaIpcCloseMemHandle\")");
  }
  ExportTable* table = own_table(false);
  if (table == nullptr || arena_base == 0) return cudaSuccess;
  TableLock lock(*table);
  ExportEntry* entry = find_entry(*table, allocation.device, p - arena_base);
  if (entry == nullptr) return cudaSuccess;
  for (const ImporterSlot& slot : entry->importers) {
    if (slot.opens == 0 || !alive(slot.pid)) continue;
    violation("ipc", "cudaFree(" + pointer_text(pointer) + ") on " + self() +
                         " frees memory process " + std::to_string(slot.pid) +
                         " still has open (cudaIpcOpenMemHandle without cudaIpcCloseMemHandle): "
                         "undefined behaviour (\"Calling cudaFree on an exported memory region "
                         "before calling cudaIpcCloseMemHandle in the importing context will "
                         "result in undefined behavior\")");
    break;
  }
  entry->generation = 0;
  return cudaSuccess;
}

namespace {

cudaError_t get_handle(cudaIpcMemHandle_t* out, void* pointer) {
  if (out == nullptr) return cudaErrorInvalidValue;
  Handle handle;
  {
    Memory& m = memory();
    std::lock_guard lock(m.mutex);
    const auto* found = m.find(reinterpret_cast<uintptr_t>(pointer));
    // cudaIpcGetMemHandle takes "the base of an existing device memory allocation created with
    // cudaMalloc": pinned host memory and imported memory are not; a pointer inside one gives
    // the allocation's handle (the importer gets its base).
    if (found == nullptr || found->second.device < 0 || found->second.imported) {
      return cudaErrorInvalidValue;
    }
    const Arena& arena = *m.devices[static_cast<size_t>(found->second.device)];
    handle.device = found->second.device;
    handle.arena_fd = arena.fd();
    handle.offset = found->first - arena.base();
    handle.size = found->second.size;
  }
  ExportTable* table = own_table(true);
  if (table == nullptr) return cudaErrorMemoryAllocation;
  {
    TableLock lock(*table);
    ExportEntry* entry = find_entry(*table, handle.device, handle.offset);
    if (entry == nullptr) entry = new_entry(*table, handle.device, handle.offset, handle.size);
    if (entry == nullptr) return cudaErrorMemoryAllocation;
    handle.generation = entry->generation;
  }
  {
    std::lock_guard lock(model_mutex());
    note_host_synchronised();
  }
  handle.magic = kHandleMagic;
  handle.pid = getpid();
  handle.table_fd = ipc().own_fd;
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->reserved, &handle, sizeof handle);
  return cudaSuccess;
}

// Counts this process as an importer of `entry` (under the table's lock).
bool count_importer(ExportEntry& entry, int delta) {
  const int me = getpid();
  for (ImporterSlot& slot : entry.importers) {
    if (slot.pid == me && slot.opens > 0) {
      slot.opens = static_cast<uint32_t>(static_cast<int>(slot.opens) + delta);
      return true;
    }
  }
  if (delta < 0) return true;
  for (ImporterSlot& slot : entry.importers) {
    if (slot.opens != 0 && alive(slot.pid)) continue;
    slot = ImporterSlot{me, 1};
    return true;
  }
  violation("setup",
            "more than " + std::to_string(kMaxImporters) + " processes import one allocation");
  return false;
}

cudaError_t check_exported(Ipc& state, const Handle& handle, Knowledge* published) {
  const std::string what = "cudaIpcOpenMemHandle on " + self() + ": the handle of process " +
                           std::to_string(handle.pid) + "'s allocation at offset " +
                           std::to_string(handle.offset) + " of device " +
                           std::to_string(handle.device);
  ExportTable* table = remote_table(state, handle.pid, handle.table_fd);
  if (table == nullptr) {
    return ipc_error(cudaErrorInvalidValue, what + " names a process that is gone");
  }
  {
    TableLock lock(*table);
    ExportEntry* entry = find_entry(*table, handle.device, handle.offset);
    if (entry == nullptr || entry->generation != handle.generation) {
      return ipc_error(cudaErrorInvalidValue, what + " names memory the exporter has freed");
    }
    if (!count_importer(*entry, 1)) return cudaErrorMemoryAllocation;
    *published = table->synced;
  }
  return cudaSuccess;
}

// Maps the allocation's pages into the import region; its base in *out.
cudaError_t map_import(Ipc& state, const Handle& handle, void** out) {
  const size_t page = page_size();
  const size_t first = handle.offset / page * page;
  const size_t length = (handle.offset + handle.size + page - 1) / page * page - first;
  const int fd = open_remote(handle.pid, handle.arena_fd);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const uintptr_t at = fd < 0 ? 0 : m.imports.map(fd, first, length);
  if (fd >= 0) close(fd);
  if (at == 0) return cudaErrorMapBufferObjectFailed;
  const uintptr_t base = at + (handle.offset - first);
  m.live[base] = Allocation{handle.size, handle.device, true, handle.pid};
  state.imports[base] = Import{handle.pid, handle.device, handle.offset, handle.generation,
                               at,         length,        handle.size,   1};
  *out = reinterpret_cast<void*>(base);
  return cudaSuccess;
}

cudaError_t open_handle(void** out, const cudaIpcMemHandle_t& raw, unsigned flags) {
  // "flags - Flags for this operation. Must be specified as cudaIpcMemLazyEnablePeerAccess".
  if (out == nullptr || flags != cudaIpcMemLazyEnablePeerAccess) return cudaErrorInvalidValue;
  Handle handle;
  std::memcpy(&handle, raw.reserved, sizeof handle);
  if (handle.magic != kHandleMagic) return cudaErrorInvalidValue;
  if (handle.pid == getpid()) {
    // The driver refuses a context's own memory (CUDA_ERROR_INVALID_CONTEXT, which the runtime
    // returns as cudaErrorDeviceUninitialized, "invalid device context").
    return ipc_error(cudaErrorDeviceUninitialized,
                     "cudaIpcOpenMemHandle on " + self() +
                         ": a process cannot open its own IPC handle; use the pointer");
  }
  Ipc& state = ipc();
  std::unique_lock lock(state.mutex);
  for (auto& [base, import] : state.imports) {
    // "If the memory handle has already been opened by the current context, the reference
    // count on the handle is incremented by 1 and the existing device pointer is returned".
    if (import.pid == handle.pid && import.device == handle.device &&
        import.offset == handle.offset && import.generation == handle.generation) {
      ++import.references;
      *out = reinterpret_cast<void*>(base);
      return cudaSuccess;
    }
  }
  Knowledge published;
  if (const cudaError_t e = check_exported(state, handle, &published); e != cudaSuccess) return e;
  const cudaError_t mapped = map_import(state, handle, out);
  // Outside the IPC lock: the model's lock is taken after it elsewhere.
  lock.unlock();
  if (mapped == cudaSuccess) acquire_published(published);
  return mapped;
}

cudaError_t close_handle(void* pointer) {
  Ipc& state = ipc();
  std::lock_guard lock(state.mutex);
  const auto it = state.imports.find(reinterpret_cast<uintptr_t>(pointer));
  if (it == state.imports.end()) return cudaErrorInvalidValue;
  if (--it->second.references > 0) return cudaSuccess;
  const Import import = it->second;
  state.imports.erase(it);
  if (const auto table = state.remote.find(import.pid); table != state.remote.end()) {
    TableLock lock(*table->second);
    ExportEntry* entry = find_entry(*table->second, import.device, import.offset);
    if (entry != nullptr && entry->generation == import.generation) count_importer(*entry, -1);
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(pointer);
  forget_accesses(base, base + import.size);
  Memory& m = memory();
  std::lock_guard memory_lock(m.mutex);
  m.live.erase(base);
  m.imports.unmap(import.map_at, import.map_length);
  return cudaSuccess;
}

}  // namespace
}  // namespace fobmodel::detail

namespace fobmodel {

bool ipc_owner(const void* pointer, int* pid) {
  using namespace detail;
  int device = 0;
  uint64_t offset = 0;
  if (imported_owner(pointer, pid, &device, &offset)) return true;
  if (!exported_at(pointer, &device, &offset)) return false;
  *pid = getpid();
  return true;
}

}  // namespace fobmodel

extern "C" {

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  FOB_RUNTIME_CALL(cudaIpcGetMemHandle, v4010);
  return fobmodel::record_error(fobmodel::detail::get_handle(handle, devPtr));
}

cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaIpcOpenMemHandle, v4010);
  return fobmodel::record_error(fobmodel::detail::open_handle(devPtr, handle, flags));
}

// "Decrements the reference count of the memory returned by cudaIpcOpenMemHandle by 1. When the
// reference count reaches 0, this API unmaps the memory". Anything else is not such memory:
// cudaErrorInvalidValue.
cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  FOB_RUNTIME_CALL(cudaIpcCloseMemHandle, v4010);
  // The model waits for the device's queued work first, so that no queued copy touches pages it
  // unmaps.
  if (devPtr != nullptr) cudaDeviceSynchronize();
  return fobmodel::record_error(fobmodel::detail::close_handle(devPtr));
}

}  // extern "C"
