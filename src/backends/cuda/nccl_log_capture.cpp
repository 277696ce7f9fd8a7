#include "nccl_log_capture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fob/nccl_log.h"

namespace fob {
namespace {

// The subsystems whose lines fob/nccl_log.h reads: init (channels, comm), graph (path types),
// env (CTA limits), the transports' connection lines and registration.
constexpr const char* kSubsystems = "INIT,GRAPH,ENV,REG,P2P,SHM,NET";
// One read takes at most this much: NCCL writes a few hundred lines per communicator.
constexpr long long kMaxRead = 16 << 20;

bool level_at_least_info(const char* level) {
  return strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0 ||
         strcasecmp(level, "ABORT") == 0;
}

}  // namespace

NcclLogCapture::NcclLogCapture(int rank) : rank_(rank) {
  if (const char* file = std::getenv("NCCL_DEBUG_FILE"); file && *file) {
    why_ = std::string("NCCL_DEBUG_FILE is set (") + file +
           "), so NCCL's log is the user's: its channels and transports are not read";
    return;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/fobench-nccl-XXXXXX";
  if (!mkdtemp(dir.data())) {
    why_ = "cannot make a folder for NCCL's log in " + dir + ": " + std::strerror(errno);
    return;
  }
  dir_ = dir;
  path_ = dir_ + "/nccl.log";
  const char* level = std::getenv("NCCL_DEBUG");
  echo_all_ = level && level_at_least_info(level);
  setenv("NCCL_DEBUG", "INFO", 1);
  std::string subsys = kSubsystems;
  if (const char* user = std::getenv("NCCL_DEBUG_SUBSYS"); user && *user && user[0] != '^') {
    subsys = std::string(user) + "," + kSubsystems;
  }
  setenv("NCCL_DEBUG_SUBSYS", subsys.c_str(), 1);
  setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
}

NcclLogCapture::~NcclLogCapture() {
  if (path_.empty()) return;
  take();  // the last warnings go on to stderr
  unlink(path_.c_str());
  rmdir(dir_.c_str());
}

std::vector<std::string> NcclLogCapture::take() {
  std::vector<std::string> lines;
  if (path_.empty()) return lines;
  const int fd = open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (why_.empty()) why_ = "NCCL did not write its log to " + path_;
    return lines;
  }
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > offset_) {
    const long long want = std::min<long long>(st.st_size - offset_, kMaxRead);
    std::string data(static_cast<size_t>(want), '\0');
    const ssize_t got = pread(fd, data.data(), data.size(), offset_);
    if (got > 0) {
      offset_ += got;
      data.resize(static_cast<size_t>(got));
      data = partial_ + data;
      size_t begin = 0;
      for (size_t nl; (nl = data.find('\n', begin)) != std::string::npos; begin = nl + 1) {
        if (nl > begin) lines.push_back(data.substr(begin, nl - begin));
      }
      partial_ = data.substr(begin);
    }
  }
  close(fd);
  const std::vector<std::string> echoed = echo_all_ ? lines : nccl_warnings(lines);
  for (const std::string& line : echoed) {
    std::fprintf(stderr, "[fobench] rank %d: NCCL: %s\n", rank_, line.c_str());
  }
  return lines;
}

}  // namespace fob
