// The rendezvous: ids, the file they name, and its mapping.
#include "segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <utility>
#include <vector>

namespace fobnccl {
namespace {

size_t align_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}
size_t header_bytes() {
  return align_up(sizeof(Header), 4096);
}
size_t channels_bytes(int n) {
  return align_up(kSets * n * n * sizeof(Channel), 4096);
}

// Ids this process made, unlinked at exit if no rank got to join (and unlink) them. Only the
// creating process unlinks: a forked child inherits the list, not the id.
std::mutex g_created_mu;
std::vector<std::pair<pid_t, std::string>>* g_created = nullptr;

void unlink_created() {
  std::lock_guard<std::mutex> lock(g_created_mu);
  if (!g_created) return;
  for (const auto& [pid, path] : *g_created) {
    if (pid == getpid()) unlink(path.c_str());
  }
}

void remember(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_created_mu);
  if (!g_created) {
    g_created = new std::vector<std::pair<pid_t, std::string>>();
    std::atexit(unlink_created);
  }
  g_created->emplace_back(getpid(), path);
}

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// The id's path, checked: the magic, then a NUL-terminated absolute path.
bool id_path(const Id& id, std::string* path) {
  if (std::memcmp(id.bytes, kIdMagic, sizeof kIdMagic) != 0) return false;
  const char* p = id.bytes + sizeof kIdMagic;
  const size_t room = kIdBytes - sizeof kIdMagic;
  const size_t len = strnlen(p, room);
  if (len == 0 || len == room || p[0] != '/') return false;
  path->assign(p, len);
  return true;
}

// Opens the rendezvous file: O_NOFOLLOW refuses a symlink planted in its place, and only a
// regular file of this user is accepted.
int open_checked(const std::string& path, std::string* why) {
  const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP ? "the NCCL id's rendezvous " + path + " is a symlink: refused"
                          : errno_text("cannot open the NCCL id's rendezvous", path) +
                                " (ncclCommInitRank needs an id from ncclGetUniqueId, and the "
                                "rendezvous is gone once every rank joined)";
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      static_cast<size_t>(st.st_size) < header_bytes()) {
    *why = "the NCCL id's rendezvous " + path + " is not a rendezvous file of this user";
    close(fd);
    return -1;
  }
  return fd;
}

// nranks is settled by the first rank to join; every later rank must agree.
bool settle_nranks(Header* h, int nranks, int rank, std::string* why) {
  const int32_t mine = nranks + 256 * (rank + 1);
  int32_t seen = 0;
  if (h->nranks.compare_exchange_strong(seen, mine) || seen % 256 == nranks) return true;
  *why = "ncclCommInitRank: rank " + std::to_string(rank) + " joins with nranks " +
         std::to_string(nranks) + ", but rank " + std::to_string(seen / 256 - 1) +
         " joined the same id with nranks " + std::to_string(seen % 256);
  return false;
}

// "ncclCommInitRank: rank must be between 0 and nranks-1 and unique within a communicator
// clique" (NCCL API, ncclCommInitRank).
bool take_slot(Header* h, int rank, std::string* why) {
  int32_t pid = 0;
  if (h->ranks[rank].pid.compare_exchange_strong(pid, static_cast<int32_t>(getpid()))) return true;
  *why = "ncclCommInitRank: rank " + std::to_string(rank) + " joined twice: by process " +
         std::to_string(pid) + " and by process " + std::to_string(getpid()) +
         " (a rank must be unique within a communicator)";
  return false;
}

}  // namespace

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

size_t ring_bytes_for(int nranks) {
  const size_t budget = size_t{64} << 20;
  size_t ring = budget / (2 * static_cast<size_t>(nranks) * static_cast<size_t>(nranks));
  ring = std::min<size_t>(std::max<size_t>(ring, size_t{64} << 10), size_t{1} << 20);
  return ring / 4096 * 4096;
}

size_t segment_bytes(int nranks, size_t ring) {
  return header_bytes() + channels_bytes(nranks) + kSets * nranks * nranks * ring;
}

Segment::~Segment() {
  if (base) munmap(base, size);
}

Channel& Segment::channel(int set, int src, int dst) const {
  auto* ch = reinterpret_cast<Channel*>(base + header_bytes());
  return ch[(set * nranks + src) * nranks + dst];
}

unsigned char* Segment::ring_of(int set, int src, int dst) const {
  return base + header_bytes() + channels_bytes(nranks) +
         static_cast<size_t>((set * nranks + src) * nranks + dst) * ring;
}

Result create_id(Id* id, std::string* why) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  unsigned char rnd[12];
  if (getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) {
    *why = "getrandom failed";
    return kSystemError;
  }
  std::string path = dir + "/fobnccl-";
  for (unsigned char c : rnd) {
    static const char* hex = "0123456789abcdef";
    path += hex[c >> 4];
    path += hex[c & 15];
  }
  if (path.size() + 1 > kIdBytes - sizeof kIdMagic) {
    *why = "TMPDIR is too long for an NCCL id: " + dir;
    return kSystemError;
  }
  // O_EXCL with O_NOFOLLOW: never opens what someone planted under that name.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = errno_text("cannot create the NCCL rendezvous", path);
    return kSystemError;
  }
  Header fresh{};
  std::memcpy(fresh.magic, kIdMagic, sizeof kIdMagic);
  const bool ok =
      ftruncate(fd, static_cast<off_t>(header_bytes())) == 0 &&
      pwrite(fd, fresh.magic, sizeof fresh.magic, 0) == static_cast<ssize_t>(sizeof fresh.magic);
  close(fd);
  if (!ok) {
    *why = errno_text("cannot write the NCCL rendezvous", path);
    unlink(path.c_str());
    return kSystemError;
  }
  remember(path);
  *id = Id{};
  std::memcpy(id->bytes, kIdMagic, sizeof kIdMagic);
  std::memcpy(id->bytes + sizeof kIdMagic, path.c_str(), path.size() + 1);
  return kSuccess;
}

std::shared_ptr<Segment> open_segment(const Id& id, int nranks, int rank, Result* result,
                                      std::string* why) {
  *result = kInvalidArgument;
  std::string path;
  if (!id_path(id, &path)) {
    *why = "ncclCommInitRank: the id was not made by ncclGetUniqueId";
    return nullptr;
  }
  const int fd = open_checked(path, why);
  if (fd < 0) {
    *result = kSystemError;
    return nullptr;
  }
  auto seg = std::make_shared<Segment>();
  seg->path = path;
  seg->nranks = nranks;
  seg->ring = ring_bytes_for(nranks);
  seg->size = segment_bytes(nranks, seg->ring);
  // Every rank grows the file to the same size; growing is all ftruncate does here.
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && (static_cast<size_t>(st.st_size) >= seg->size ||
                                    ftruncate(fd, static_cast<off_t>(seg->size)) == 0);
  void* p = ok ? mmap(nullptr, seg->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED) {
    *why = errno_text("cannot map the NCCL rendezvous", path);
    *result = kSystemError;
    return nullptr;
  }
  seg->base = static_cast<unsigned char*>(p);
  Header* h = seg->header();
  if (std::memcmp(h->magic, kIdMagic, sizeof kIdMagic) != 0) {
    *why = "the NCCL id's rendezvous " + path + " is not a rendezvous file";
    return nullptr;
  }
  if (!settle_nranks(h, nranks, rank, why) || !take_slot(h, rank, why)) return nullptr;
  h->ranks[rank].state.store(kJoined);
  h->joined.fetch_add(1);
  *result = kSuccess;
  return seg;
}

}  // namespace fobnccl
