// read_results: a results file given by someone else is read without letting it take the
// process. The file is read once, whole, into memory (so what is checked is what is parsed).
// A journal (NAME.h5.partial, journal.h) is parsed here by fobench's own checked decoder. An
// HDF5 file is parsed in a forked child under a memory limit and a deadline: HDF5 1.10.8 itself
// crashes on some damaged files (its global-heap reads) and loops on others, which no check
// before the first HDF5 call can rule out; the child hands the contents back as checked bytes
// (case_codec.h), and its death or its deadline becomes exit 2 naming the file.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "case_codec.h"
#include "fob/output_file.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/text_file.h"
#include "fob/types.h"
#include "h5_reader.h"
#include "journal.h"

namespace fob {
namespace {

// The child's room beyond what the process already maps: enough for the largest file HDF5 reads
// (its image, HDF5's copy, the decoded arrays and their encoding), and never less than 1 GiB.
constexpr unsigned long long kMinChildBytes = 1ULL << 30;
constexpr unsigned long long kChildBytesPerFileByte = 8;
// The child's deadline: 10 s, and a second per 25 MB, far beyond what a sound file takes.
constexpr double kChildSeconds = 10;
constexpr double kChildBytesPerSecond = 25e6;

enum class Reply : char { contents = 0, bad_input = 1, fault = 2 };

// The file's bytes, from one open file: a regular file (opened without blocking, so that a
// FIFO swapped in after the check cannot hang the reader), read up to the size it had then,
// so that a journal still being appended to reads as far as it was (read_journal leaves out
// a record cut short).
std::string read_whole(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw InputError("cannot open '" + path + "' as HDF5: no such file");
    throw InputError("cannot open '" + path + "' as HDF5: " + std::strerror(errno));
  }
  return read_open_file(fd, path, "results file", kMaxResultsFileBytes);
}

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

unsigned long long mapped_bytes() {
  unsigned long long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
}

[[noreturn]] void child(int out, const std::string& path, const std::string& bytes) {
  const unsigned long long room = std::max(
      kMinChildBytes, kChildBytesPerFileByte * static_cast<unsigned long long>(bytes.size()));
  const rlimit limit{mapped_bytes() + room, mapped_bytes() + room};
  setrlimit(RLIMIT_AS, &limit);
  // For tests: FOB_TEST_READER=crash|hang makes the child do what HDF5 does on some damaged
  // files, which no file made on purpose does reliably across HDF5 versions.
  if (const char* test = std::getenv("FOB_TEST_READER")) {
    if (std::string(test) == "crash") raise(SIGSEGV);
    while (std::string(test) == "hang") pause();
  }
  std::string reply;
  try {
    const std::vector<char> image(bytes.begin(), bytes.end());
    reply = static_cast<char>(Reply::contents) + codec::encode_file(read_h5_image(path, image));
  } catch (const InputError& e) {
    reply = static_cast<char>(Reply::bad_input) + std::string(e.what());
  } catch (const std::bad_alloc&) {
    reply = static_cast<char>(Reply::fault) + std::string("it needs more than ") +
            std::to_string(room >> 20) +
            " MiB of memory to read (declared sizes beyond what it "
            "holds?)";
  } catch (const std::exception& e) {
    reply = static_cast<char>(Reply::fault) + std::string(e.what());
  }
  write_all(out, reply);
  _exit(0);
}

// The child's reply, or why there is none: its deadline passed (then it is killed) or it died.
std::string collect(int in, pid_t pid, const std::string& path, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string reply;
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{in, POLLIN, 0};
    const int ready = left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      throw InputError("cannot read '" + path + "': reading it took more than " +
                       std::to_string(static_cast<int>(seconds)) +
                       " s, so it was stopped (a damaged or crafted HDF5 file)");
    }
    const ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw InputError("cannot read '" + path + "': the HDF5 library crashed reading it (" +
                     strsignal(WTERMSIG(status)) + "): the file is damaged or crafted");
  }
  if (reply.empty()) throw InputError("cannot read '" + path + "': its reader ended without reply");
  return reply;
}

ResultFile read_hdf5_sandboxed(const std::string& path, const std::string& bytes) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw RuntimeFault(std::string("cannot make a pipe to read '") + path +
                       "': " + std::strerror(errno));
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw RuntimeFault("cannot start a reader for '" + path + "': " + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], path, bytes);
  }
  close(fds[1]);
  std::string reply;
  try {
    reply = collect(fds[0], pid, path,
                    kChildSeconds + static_cast<double>(bytes.size()) / kChildBytesPerSecond);
  } catch (...) {
    close(fds[0]);
    throw;
  }
  close(fds[0]);
  const Reply kind = static_cast<Reply>(reply[0]);
  const std::string_view body = std::string_view(reply).substr(1);
  if (kind == Reply::contents) return codec::decode_file(body, "'" + path + "' (as read)");
  if (kind == Reply::bad_input) throw InputError(std::string(body));
  throw InputError("cannot read '" + path + "': " + std::string(body));
}

}  // namespace

bool is_journal_file(const std::string& path) {
  // Opened as --resume will write it: never through a link, never a file with another name.
  const int fd = open_existing_regular(path, "--resume");
  char head[16] = {};
  const ssize_t n = pread(fd, head, sizeof head, 0);
  close(fd);
  return n > 0 && is_journal(std::string_view(head, static_cast<size_t>(n)));
}

ResultFile read_results(const std::string& path) {
  const std::string bytes = read_whole(path);
  if (is_journal(bytes)) return read_journal(bytes, path);
  return read_hdf5_sandboxed(path, bytes);
}

}  // namespace fob
