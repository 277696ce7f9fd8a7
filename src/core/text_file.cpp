#include "fob/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fob/config.h"
#include "fob/types.h"

namespace fob {
namespace {

const char* kind_of(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISSOCK(mode) ? "a socket"
                          : "a device";
}

// Files smaller than this are never judged sparse: a few holes in a small file are harmless.
constexpr uint64_t kSparseFrom = uint64_t{1} << 20;

}  // namespace

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    throw InputError(what + ": cannot read " + quote_value(path) + ": " + std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return;
  throw InputError(what + ": " + quote_value(path) + " is " + kind_of(st.st_mode) +
                   ", not a regular file");
}

void require_plausible_size(const struct stat& st, const std::string& path, const std::string& what,
                            uint64_t max_bytes) {
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    throw InputError(what + ": " + quote_value(path) + " is " + std::to_string(size) +
                     " bytes, more than the " + std::to_string(max_bytes) + " a " + what +
                     " may hold");
  }
  const uint64_t on_disk = static_cast<uint64_t>(st.st_blocks) * 512;
  if (size > kSparseFrom && on_disk < size / 8) {
    throw InputError(what + ": " + quote_value(path) + " claims " + std::to_string(size) +
                     " bytes but takes " + std::to_string(on_disk) +
                     " on disk: a sparse file, mostly holes, is not one fobench wrote");
  }
}

std::string read_open_file(int fd, const std::string& path, const std::string& what,
                           uint64_t max_bytes) {
  std::string text, error;
  struct stat st {};
  try {
    if (fstat(fd, &st) != 0) throw InputError(what + ": cannot read " + quote_value(path));
    if (!S_ISREG(st.st_mode)) {
      throw InputError(what + ": " + quote_value(path) + " is " + kind_of(st.st_mode) +
                       ", not a regular file");
    }
    require_plausible_size(st, path, what, max_bytes);
  } catch (...) {
    close(fd);
    throw;
  }
  // Read to its size then: what is appended meanwhile is not read; a file that shrank reads as
  // far as it goes.
  text.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text.size() && error.empty()) {
    const ssize_t n = read(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      text.resize(done);
    } else if (errno != EINTR) {
      error = std::strerror(errno);
    }
  }
  close(fd);
  if (!error.empty()) throw InputError(what + ": cannot read " + quote_value(path) + ": " + error);
  return text;
}

std::string read_regular_file(const std::string& path, const std::string& what,
                              uint64_t max_bytes) {
  require_regular_file(path, what);
  // Judged on the open file, so a file swapped in after the check is the one judged; opened
  // without blocking, so a FIFO swapped in cannot hang the reader.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw InputError(what + ": cannot read " + quote_value(path) + ": " + std::strerror(errno));
  return read_open_file(fd, path, what, max_bytes);
}

}  // namespace fob
