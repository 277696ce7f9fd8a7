// The runtime model's memory (memory.cpp): the device arenas, shared so that another process can
// map an allocation (CUDA IPC, ipc.cpp), the pinned host arena, the region imported allocations
// are mapped into, and the live allocations of all three. Shared by the runtime's sources only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace fobmodel::detail {

struct Allocation {
  size_t size = 0;
  int device = -1;  // -1: pinned host; imported: the exporter's device
  // Mapped by cudaIpcOpenMemHandle from another process (ipc.cpp): device memory of that
  // process, freed only by cudaIpcCloseMemHandle.
  bool imported = false;
  int exporter_pid = 0;
};

// Address ranges handed out first-fit from one reserved range; sizes are rounded to `granule`.
class FreeList {
 public:
  FreeList(size_t bytes, size_t granule) : granule_(granule) { free_[0] = bytes; }
  size_t rounded(size_t size) const { return (size + granule_ - 1) / granule_ * granule_; }
  // The offset of `size` bytes (rounded), or SIZE_MAX when no block is large enough.
  size_t take(size_t size);
  void give(size_t offset, size_t size);
  size_t used() const { return used_; }

 private:
  size_t granule_;
  size_t used_ = 0;
  std::map<size_t, size_t> free_;
};

// One reserved range. A device arena is a shared memory file (memfd, or an unlinked file under
// $TMPDIR where memfd_create is refused) mapped MAP_SHARED, so that an importer can map the same
// pages; the pinned host arena is private anonymous memory.
class Arena {
 public:
  Arena(size_t bytes, bool shared);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  bool contains(uintptr_t p) const { return p >= base_ && p < base_ + bytes_; }
  uintptr_t base() const { return base_; }
  int fd() const { return fd_; }
  uintptr_t allocate(size_t size);
  void release(uintptr_t p, size_t size);
  size_t used() const { return free_.used(); }
  // In a forked child: a file of its own holding a copy of `live` ([address, size) pairs), so
  // that the child's device memory is its own, as a GPU context is per process.
  void renew(const std::vector<std::pair<uintptr_t, size_t>>& live);

 private:
  uintptr_t base_ = 0;
  size_t bytes_ = 0;
  int fd_ = -1;
  FreeList free_;
};

// The range imported allocations are mapped into: reserved PROT_NONE, each import a MAP_FIXED
// shared mapping of the exporter's pages, reserved again when it is closed.
class ImportRegion {
 public:
  ImportRegion();
  ~ImportRegion();
  ImportRegion(const ImportRegion&) = delete;
  ImportRegion& operator=(const ImportRegion&) = delete;
  bool contains(uintptr_t p) const { return p >= base_ && p < base_ + bytes_; }
  // Maps `length` bytes of `fd` from `offset` (both page-aligned); 0 on failure.
  uintptr_t map(int fd, size_t offset, size_t length);
  void unmap(uintptr_t at, size_t length);

 private:
  uintptr_t base_ = 0;
  size_t bytes_ = 0;
  FreeList free_;
};

struct Memory {
  std::mutex mutex;
  std::vector<std::unique_ptr<Arena>> devices;
  Arena pinned{size_t{64} << 30, false};
  ImportRegion imports;
  std::map<uintptr_t, Allocation> live;
  size_t per_device = 0;

  Memory();
  int device_of(uintptr_t p) const;
  // The live allocation holding p, if p lies in an arena; null otherwise.
  const std::pair<const uintptr_t, Allocation>* find(uintptr_t p) const;
};

Memory& memory();
size_t page_size();

}  // namespace fobmodel::detail
