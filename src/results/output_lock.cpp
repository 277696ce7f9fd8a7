#include "output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>

#include "fob/types.h"
#include "output_file_detail.h"

namespace fob {
namespace {

std::string holder_of(int fd) {
  char text[512] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.empty() ? "another run" : holder;
}

}  // namespace

void OutputLock::refuse_planted(const std::string& results_path, const struct stat& st) {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  throw InputError("-o '" + results_path + "': '" + path_ + "' " + not_own_regular(st) +
                   "; fobench's lock file must be a regular file with one link, never a symbolic "
                   "link, a directory, a FIFO or a hard link: remove it");
}

OutputLock::OutputLock(const std::string& results_path) : path_(results_path + ".lock") {
  // The lock file may be unlinked by its holder between our open and our flock; then we would
  // hold a lock on a file nobody else sees, so check that the path still names what we locked.
  for (int attempt = 0; attempt < 8; ++attempt) {
    // O_NONBLOCK: a FIFO planted at the name must not hold the run up; it is refused below.
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd_ < 0) {
      const int err = errno;
      struct stat there = {};
      if (lstat(path_.c_str(), &there) == 0) refuse_planted(results_path, there);
      throw InputError("-o '" + results_path + "': cannot create '" + path_ + "': " +
                       std::strerror(err) + "; the results file must go to a writable directory");
    }
    struct stat opened = {};
    if (fstat(fd_, &opened) == 0 && !S_ISREG(opened.st_mode)) refuse_planted(results_path, opened);
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = holder_of(fd_);
      close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK) {
        throw InputError("-o '" + results_path + "': " + holder + " is writing it (lock '" + path_ +
                         "'); a live results file is never touched by a second run, "
                         "--force or not: wait for it to end, or choose another -o");
      }
      throw InputError("-o '" + results_path + "': cannot lock '" + path_ +
                       "': " + std::strerror(err));
    }
    struct stat held = {}, named = {};
    if (fstat(fd_, &held) == 0 && lstat(path_.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      // Checked on what is held, right before it is truncated: a second name of the same file
      // would have its contents replaced by the lock's note.
      if (held.st_nlink != 1) refuse_planted(results_path, held);
      break;
    }
    close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0) throw InputError("-o '" + results_path + "': cannot hold '" + path_ + "'");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  char when[32] = {};
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const std::string holder =
      "the run with pid " + std::to_string(getpid()) + " on " + host + " (started " + when + ")\n";
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, holder.data(), holder.size(), 0) < 0) {
    // The lock holds without the note; a second run is still refused, only less precisely.
  }
}

// A run ended by a signal or the watchdog leaves the lock file behind; the kernel has let go of
// the lock with the process, so the next run takes it over.
OutputLock::~OutputLock() {
  release();
}

void OutputLock::release() {
  if (fd_ < 0) return;
  unlink(path_.c_str());
  close(fd_);
  fd_ = -1;
}

}  // namespace fob
