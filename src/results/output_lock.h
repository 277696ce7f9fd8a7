// One writer per results file. A run holds NAME.h5.lock (an flock, released by the kernel
// however the run ends) from before it looks at NAME.h5 or NAME.h5.partial until it has renamed
// the finished file, so a second run given the same -o — with --force or --resume too — is
// refused before it touches either file, with the holder named.
#pragma once

#include <sys/stat.h>

#include <string>

namespace fob {

class OutputLock {
 public:
  // Throws InputError naming the run that holds the lock, or why the lock file cannot be made
  // (a read-only or pseudo file system, a missing directory, no permission).
  explicit OutputLock(const std::string& results_path);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  // Removes the lock file and lets go (also on destruction).
  void release();

 private:
  // Closes what was opened and throws InputError saying what `st` (found at the lock's name)
  // is and that it must go.
  [[noreturn]] void refuse_planted(const std::string& results_path, const struct stat& st);

  std::string path_;
  int fd_ = -1;
};

}  // namespace fob
