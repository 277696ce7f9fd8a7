// Helpers of the NCCL model's end-to-end tests: n ranks as n forked processes, each a fresh
// process for the runtime model, NCCL's environment (read once per process) and its log. The
// test process itself only makes the unique id, so that nothing it initialised leaks into a
// rank.
#pragma once

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "segment.h"

namespace fobnccl_e2e {

// A scratch directory, removed with what is in it when the test ends.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/fobnccl-e2e-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() {
    const std::string command = "rm -rf '" + path_ + "'";
    if (std::system(command.c_str()) != 0) std::perror("rm");
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Removes the rendezvous file an id names, if no rank joined it (joining removes it): the
// model's id is its magic and the file's path (segment.h).
inline void remove_rendezvous(const ncclUniqueId& id) {
  unlink(id.internal + sizeof fobnccl::kIdMagic);
}

// A unique id made in a process of its own: ncclGetUniqueId reads NCCL's logging environment
// once per process, and the ranks, forked from this one, must read theirs. The helper leaves
// with _exit, so that the rendezvous it made stays for the ranks (the model's creator unlinks
// an unused one at exit).
inline bool fresh_id(ncclUniqueId* id) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    ncclUniqueId made;
    const bool ok = ncclGetUniqueId(&made) == ncclSuccess &&
                    write(fds[1], &made, sizeof made) == static_cast<ssize_t>(sizeof made);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  const bool ok = read(fds[0], id, sizeof *id) == static_cast<ssize_t>(sizeof *id);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct Ranks {
  std::vector<int> codes;         // each rank's exit code (-1: killed or crashed)
  std::vector<int> pids;          // each rank's process id, which "%p" becomes
  std::vector<std::string> errs;  // each rank's stderr
};

// Runs body(rank, id) in n processes (rank r on device r % 4, FOB_MODEL_DEADLOCK_S=2); its
// return value is the rank's exit code. Each rank's stderr goes to a file read back after.
inline Ranks run_ranks(int n, const std::function<int(int, const ncclUniqueId&)>& body) {
  ncclUniqueId id;
  Ranks out;
  TempDir dir;
  if (!fresh_id(&id)) return out;
  for (int r = 0; r < n; ++r) {
    const std::string err = dir.file("rank" + std::to_string(r));
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) dup2(fd, 2);
      setenv("FOB_MODEL_DEADLOCK_S", "2", 1);
      cudaSetDevice(r % 4);
      const int code = body(r, id);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    out.pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(out.pids[static_cast<size_t>(r)], &status, 0);
    out.codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    out.errs.push_back(read_file(dir.file("rank" + std::to_string(r))));
  }
  remove_rendezvous(id);
  return out;
}

// Every rank's stderr, for a failure message.
inline std::string all_errs(const Ranks& ranks) {
  std::string text;
  for (size_t r = 0; r < ranks.errs.size(); ++r) {
    text += "--- rank " + std::to_string(r) + " (exit " + std::to_string(ranks.codes[r]) + ")\n" +
            ranks.errs[r];
  }
  return text;
}

}  // namespace fobnccl_e2e
