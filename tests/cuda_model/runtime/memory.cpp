// Device and pinned host memory: each in its own reserved address range, so that any pointer
// tells where it lies; allocations registered for the rule "memcheck" (as compute-sanitizer's
// memcheck checks every access against the live allocations).
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "internal.h"
#include "memory.h"

namespace fobmodel::detail {
namespace {

// cudaMalloc: "The allocated memory is suitably aligned for any kind of variable" — 256 bytes
// on every current GPU (CUDA C++ Programming Guide, Device Memory Accesses).
constexpr size_t kAlignment = 256;
// A gap after each allocation, so that an access just past one lands in none.
constexpr size_t kGap = 256;

size_t device_bytes() {
  const char* text = std::getenv("FOB_MODEL_DEVICE_GIB");
  const long gib = text ? std::strtol(text, nullptr, 10) : 16;
  return static_cast<size_t>(gib > 0 ? gib : 16) << 30;
}

}  // namespace

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t FreeList::take(size_t size) {
  const size_t need = rounded(size);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    const size_t offset = it->first;
    const size_t rest = it->second - need;
    free_.erase(it);
    if (rest > 0) free_[offset + need] = rest;
    used_ += need;
    return offset;
  }
  return SIZE_MAX;
}

void FreeList::give(size_t offset, size_t size) {
  size_t length = rounded(size);
  used_ -= length;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + length) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      length += previous->second;
    }
  }
  free_[offset] = length;
}

namespace {

[[noreturn]] void cannot(const std::string& what) {
  violation("setup", "cannot " + what + ": " + std::strerror(errno));
  std::abort();
}

// A sparse shared file of `bytes`: memfd_create, or where it is refused an O_EXCL 0600 file under
// $TMPDIR, unlinked at once so that nothing is left behind (its pages are still reachable through
// /proc/<pid>/fd, which is how an importer opens them).
int shared_file(size_t bytes) {
  int fd = memfd_create("fobmodel-device", MFD_CLOEXEC);
  if (fd < 0) {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/fobmodel-XXXXXX";
    fd = mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0) cannot("create the model's device memory file " + path);
    unlink(path.c_str());
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) cannot("size the model's device memory");
  return fd;
}

}  // namespace

Arena::Arena(size_t bytes, bool shared) : bytes_(bytes), free_(bytes, kAlignment) {
  if (shared) fd_ = shared_file(bytes);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    (shared ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS) | MAP_NORESERVE, fd_, 0);
  if (base == MAP_FAILED) cannot("reserve the model's memory arena");
  base_ = reinterpret_cast<uintptr_t>(base);
}

Arena::~Arena() {
  munmap(reinterpret_cast<void*>(base_), bytes_);
  if (fd_ >= 0) close(fd_);
}

uintptr_t Arena::allocate(size_t size) {
  const size_t offset = free_.take(size + kGap);
  return offset == SIZE_MAX ? 0 : base_ + offset;
}

// The pages the allocation covered whole go back: a hole punched in the shared file (MADV_DONTNEED
// would only drop this process's view of shared pages), dropped from the private arena.
void Arena::release(uintptr_t p, size_t size) {
  const size_t need = free_.rounded(size + kGap);
  const size_t page = page_size();
  const uintptr_t first_page = (p + page - 1) / page * page;
  const uintptr_t end_page = (p + need) / page * page;
  if (end_page > first_page) {
    if (fd_ >= 0) {
      fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                static_cast<off_t>(first_page - base_), static_cast<off_t>(end_page - first_page));
    } else {
      madvise(reinterpret_cast<void*>(first_page), end_page - first_page, MADV_DONTNEED);
    }
  }
  free_.give(p - base_, size + kGap);
}

void Arena::renew(const std::vector<std::pair<uintptr_t, size_t>>& live) {
  if (fd_ < 0) return;
  const int fd = shared_file(bytes_);
  for (const auto& [address, size] : live) {
    if (pwrite(fd, reinterpret_cast<const void*>(address), size,
               static_cast<off_t>(address - base_)) != static_cast<ssize_t>(size)) {
      cannot("copy device memory into a forked process");
    }
  }
  if (mmap(reinterpret_cast<void*>(base_), bytes_, PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, 0) == MAP_FAILED) {
    cannot("map a forked process's device memory");
  }
  close(fd_);
  fd_ = fd;
}

namespace {
// Imports: 256 GiB of address space, nothing committed.
constexpr size_t kImportBytes = size_t{256} << 30;

void* reserve(void* at, size_t bytes) {
  return mmap(at, bytes, PROT_NONE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (at ? MAP_FIXED : 0), -1, 0);
}
}  // namespace

ImportRegion::ImportRegion() : bytes_(kImportBytes), free_(kImportBytes, page_size()) {
  void* base = reserve(nullptr, bytes_);
  if (base == MAP_FAILED) cannot("reserve the model's import region");
  base_ = reinterpret_cast<uintptr_t>(base);
}

ImportRegion::~ImportRegion() {
  munmap(reinterpret_cast<void*>(base_), bytes_);
}

uintptr_t ImportRegion::map(int fd, size_t offset, size_t length) {
  const size_t at = free_.take(length);
  if (at == SIZE_MAX) return 0;
  void* mapped = mmap(reinterpret_cast<void*>(base_ + at), length, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) {
    free_.give(at, length);
    return 0;
  }
  return base_ + at;
}

void ImportRegion::unmap(uintptr_t at, size_t length) {
  if (reserve(reinterpret_cast<void*>(at), length) == MAP_FAILED) cannot("unmap an import");
  free_.give(at - base_, length);
}

namespace {

// A forked child gets device memory of its own (fork_child), with the mutex the parent held
// across fork() released in both.
void fork_prepare() {
  memory().mutex.lock();
}
void fork_parent() {
  memory().mutex.unlock();
}
void fork_child() {
  Memory& m = memory();
  for (size_t d = 0; d < m.devices.size(); ++d) {
    std::vector<std::pair<uintptr_t, size_t>> live;
    for (const auto& [p, allocation] : m.live) {
      if (!allocation.imported && allocation.device == static_cast<int>(d)) {
        live.emplace_back(p, allocation.size);
      }
    }
    m.devices[d]->renew(live);
  }
  m.mutex.unlock();
}

}  // namespace

Memory::Memory() : per_device(device_bytes()) {
  for (int d = 0; d < device_count(); ++d) {
    devices.push_back(std::make_unique<Arena>(per_device, true));
  }
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int Memory::device_of(uintptr_t p) const {
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d]->contains(p)) return static_cast<int>(d);
  }
  return -1;
}

const std::pair<const uintptr_t, Allocation>* Memory::find(uintptr_t p) const {
  auto it = live.upper_bound(p);
  if (it == live.begin()) return nullptr;
  --it;
  return p < it->first + it->second.size ? &*it : nullptr;
}

Memory& memory() {
  static Memory* instance = new Memory;  // outlives the stream threads at exit
  return *instance;
}

namespace {

cudaError_t allocate(void** out, size_t size, int device) {
  if (out == nullptr) return cudaErrorInvalidValue;
  *out = nullptr;
  if (size == 0) return cudaSuccess;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  Arena& arena = device >= 0 ? *m.devices[static_cast<size_t>(device)] : m.pinned;
  const uintptr_t p = arena.allocate(size);
  if (p == 0) return cudaErrorMemoryAllocation;
  m.live[p] = Allocation{size, device};
  // Fresh device memory holds garbage on a GPU: a pattern here, so that reading it unwritten
  // shows in the results rather than passing as zeros.
  std::memset(reinterpret_cast<void*>(p), 0xA5, size);
  *out = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t release(void* pointer, bool device) {
  if (pointer == nullptr) return cudaSuccess;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const uintptr_t p = reinterpret_cast<uintptr_t>(pointer);
  const auto it = m.live.find(p);
  if (it == m.live.end() || (it->second.device >= 0) != device || it->second.imported) {
    return cudaErrorInvalidValue;
  }
  Arena& arena = device ? *m.devices[static_cast<size_t>(it->second.device)] : m.pinned;
  forget_accesses(p, p + it->second.size);
  arena.release(p, it->second.size);
  m.live.erase(it);
  return cudaSuccess;
}

// The accesses of the traced kernel running on this thread. They are all one op's, at one
// clock, so they are merged and checked for races together when it ends (or when many have
// piled up): checked one by one, each would cost a lock and a search of the detector's map, and
// tell nothing more. Bounds are checked as they come, so the report names the access.
struct TracedKernel {
  QueuedOp* op = nullptr;
  uintptr_t cached_begin = 0;
  uintptr_t cached_end = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> reads, writes;  // [begin, end)
};
thread_local TracedKernel traced;
constexpr size_t kPendingAccesses = 1 << 20;

void check_pending(std::vector<std::pair<uintptr_t, uintptr_t>>& ranges, bool write) {
  if (ranges.empty()) return;
  std::sort(ranges.begin(), ranges.end());
  uintptr_t begin = ranges.front().first, end = ranges.front().second;
  for (const auto& [b, e] : ranges) {
    if (b > end) {
      check_access(*traced.op, begin, end, write);
      begin = b;
    }
    end = std::max(end, e);
  }
  check_access(*traced.op, begin, end, write);
  ranges.clear();
}

void check_traced() {
  if (traced.op == nullptr) return;
  check_pending(traced.reads, false);
  check_pending(traced.writes, true);
}

void note_access(uintptr_t begin, uintptr_t end, bool write) {
  auto& ranges = write ? traced.writes : traced.reads;
  if (!ranges.empty() && begin <= ranges.back().second && end >= ranges.back().first) {
    ranges.back().first = std::min(ranges.back().first, begin);
    ranges.back().second = std::max(ranges.back().second, end);
    return;
  }
  ranges.emplace_back(begin, end);
  if (ranges.size() >= kPendingAccesses) check_pending(ranges, write);
}

}  // namespace

bool footprint_in_bounds(const Footprint& footprint, std::string* why) {
  if (footprint.width == 0 || footprint.rows == 0) return true;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(footprint.base);
  const uintptr_t end = begin + (footprint.rows - 1) * footprint.pitch + footprint.width;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.device_of(begin) < 0 && !m.pinned.contains(begin) && !m.imports.contains(begin)) {
    return true;  // pageable host memory
  }
  const auto* allocation = m.find(begin);
  if (allocation != nullptr && end <= allocation->first + allocation->second.size) return true;
  *why = std::string(footprint.write ? "write" : "read") + " of [" + pointer_text(footprint.base) +
         ", +" + std::to_string(end - begin) + ") ";
  *why += allocation ? "runs past the end of the " + std::to_string(allocation->second.size) +
                           "-byte allocation at " +
                           pointer_text(reinterpret_cast<const void*>(allocation->first))
                     : std::string("is in no live allocation");
  return false;
}

const void* allocation_of(const void* pointer, size_t* size) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto* allocation = m.find(reinterpret_cast<uintptr_t>(pointer));
  if (allocation == nullptr) return nullptr;
  *size = allocation->second.size;
  return reinterpret_cast<const void*>(allocation->first);
}

void set_traced_op(QueuedOp* op) {
  check_traced();
  traced.op = op;
  traced.cached_begin = traced.cached_end = 0;
}

void kernel_access(const void* address, size_t size, bool write) {
  if (traced.op == nullptr) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(address);
  const uintptr_t end = begin + size;
  if (begin < traced.cached_begin || end > traced.cached_end) {
    Memory& m = memory();
    // The arenas are fixed when the model starts: no lock for the kernel's stack, shared memory
    // and parameters, which most of its accesses are.
    if (m.device_of(begin) < 0 && !m.imports.contains(begin)) return;
    std::lock_guard lock(m.mutex);
    const auto* allocation = m.find(begin);
    if (allocation == nullptr || end > allocation->first + allocation->second.size) {
      violation("memcheck",
                traced.op->op.name + " (task \"" + traced.op->identity->task + "\") " +
                    (write ? "writes " : "reads ") + std::to_string(size) + " bytes at " +
                    pointer_text(address) +
                    (allocation ? ", past the end of its allocation" : ", in no live allocation"));
      return;
    }
    traced.cached_begin = allocation->first;
    traced.cached_end = allocation->first + allocation->second.size;
  }
  note_access(begin, end, write);
}

}  // namespace fobmodel::detail

namespace fobmodel {

Memory memory_of(const void* pointer, int* device) {
  detail::Memory& m = detail::memory();
  const uintptr_t p = reinterpret_cast<uintptr_t>(pointer);
  int d = m.device_of(p);
  if (d < 0 && m.imports.contains(p)) {
    // Imported memory is the exporter's device memory (any address in the region, as in an
    // arena, is device memory; a live import names its device).
    std::lock_guard lock(m.mutex);
    const auto* allocation = m.find(p);
    d = allocation ? allocation->second.device : 0;
  }
  if (device) *device = d;
  if (d >= 0) return Memory::device;
  return m.pinned.contains(p) ? Memory::pinned_host : Memory::other;
}

const void* live_allocation(const void* pointer, size_t bytes) {
  size_t size = 0;
  const void* base = detail::allocation_of(pointer, &size);
  if (base == nullptr) return nullptr;
  const uintptr_t offset = reinterpret_cast<uintptr_t>(pointer) - reinterpret_cast<uintptr_t>(base);
  return bytes <= size - offset ? base : nullptr;
}

}  // namespace fobmodel

using fobmodel::detail::current_device;

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  FOB_RUNTIME_CALL(cudaMalloc, v3020);
  return fobmodel::record_error(fobmodel::detail::allocate(devPtr, size, current_device()));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  FOB_RUNTIME_CALL(cudaMallocHost, v3020);
  return fobmodel::record_error(fobmodel::detail::allocate(ptr, size, -1));
}

// cudaHostAlloc: "cudaHostAllocDefault: This flag's value is defined to be 0 and causes
// cudaHostAlloc() to emulate cudaMallocHost()"; Portable, Mapped and WriteCombined "are
// orthogonal to one another". Any other bit is not a flag: cudaErrorInvalidValue. The memory
// is pinned, from the pinned arena, freed with cudaFreeHost ("Memory allocated by this function
// must be freed with cudaFreeHost()").
cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaHostAlloc, v3020);
  constexpr unsigned kFlags =
      cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if ((flags & ~kFlags) != 0) return fobmodel::record_error(cudaErrorInvalidValue);
  return fobmodel::record_error(fobmodel::detail::allocate(pHost, size, -1));
}

// cudaHostGetDevicePointer: "flags provides for future releases. For now, it must be set to 0";
// the pointer must be in "the mapped, pinned host buffer allocated by cudaHostAlloc()" (any
// pinned allocation: with unified addressing every one is mapped). "If all devices visible to
// the application have a non-zero value for the device attribute
// [cudaDevAttrCanUseHostPointerForRegisteredMem], the device pointer returned ... will match
// the original pointer pHost": every model device has it.
cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaHostGetDevicePointer, v3020);
  if (pDevice == nullptr || flags != 0) return fobmodel::record_error(cudaErrorInvalidValue);
  if (fobmodel::memory_of(pHost) != fobmodel::Memory::pinned_host ||
      fobmodel::live_allocation(pHost, 1) == nullptr) {
    return fobmodel::record_error(cudaErrorInvalidValue);
  }
  *pDevice = pHost;
  return cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  FOB_RUNTIME_CALL(cudaFree, v3020);
  // cudaFree synchronises the device (CUDA Runtime API, "API synchronization behavior"): the
  // memory may still be in use by queued work.
  if (devPtr != nullptr) cudaDeviceSynchronize();
  if (const cudaError_t e = fobmodel::detail::ipc_before_free(devPtr); e != cudaSuccess) {
    return fobmodel::record_error(e);
  }
  return fobmodel::record_error(fobmodel::detail::release(devPtr, true));
}

cudaError_t cudaFreeHost(void* ptr) {
  FOB_RUNTIME_CALL(cudaFreeHost, v3020);
  if (ptr != nullptr) cudaDeviceSynchronize();
  return fobmodel::record_error(fobmodel::detail::release(ptr, false));
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  FOB_RUNTIME_CALL(cudaMemGetInfo, v3020);
  if (free == nullptr || total == nullptr) return fobmodel::record_error(cudaErrorInvalidValue);
  auto& m = fobmodel::detail::memory();
  std::lock_guard lock(m.mutex);
  *total = m.per_device;
  *free = m.per_device - m.devices[static_cast<size_t>(current_device())]->used();
  return cudaSuccess;
}

}  // extern "C"
