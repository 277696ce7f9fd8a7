#include "ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace fobnccl::test {
namespace {

[[noreturn]] void child(const Id& id, int n, int rank, const std::function<int(Comm&)>& body,
                        double deadlock_s, double join_s, const std::string& err_path) {
  const int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) dup2(fd, 2);
  Settings s;
  s.deadlock_s = deadlock_s;
  s.join_s = join_s;
  s.report = [](const std::string& rule, const std::string& text) {
    std::fprintf(stderr, "[cuda model] %s: %s\n", rule.c_str(), text.c_str());
    std::fflush(stderr);
    _exit(kViolationExit);
  };
  Result r = kSuccess;
  std::string why;
  auto comm = Comm::join(id, n, rank, s, &r, &why);
  if (!comm) {
    std::fprintf(stderr, "join failed (%d): %s\n", r, why.c_str());
    _exit(100 + r);
  }
  const int code = body(*comm);
  std::fflush(stderr);
  _exit(code);
}

}  // namespace

Outcome run_ranks(int n, const std::function<int(Comm&)>& body, double deadlock_s, double limit_s,
                  double join_s) {
  Outcome out;
  Id id;
  std::string why;
  if (create_id(&id, &why) != kSuccess) {
    out.err = why;
    return out;
  }
  char dir_template[] = "/tmp/fobnccl-test-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::vector<pid_t> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    const std::string err_path = dir + "/rank" + std::to_string(r);
    const pid_t pid = fork();
    if (pid == 0) child(id, n, r, body, deadlock_s, join_s, err_path);
    pids.push_back(pid);
  }
  out.codes.assign(n, -1);
  std::vector<bool> done(n, false);
  int left = n;
  while (left > 0) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (done[r] || waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      done[r] = true;
      --left;
      out.codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      out.seconds = t;
    }
    if (left > 0 && t > limit_s) {
      for (int r = 0; r < n; ++r) {
        if (!done[r]) kill(pids[r], SIGKILL), waitpid(pids[r], nullptr, 0);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    const std::string path = dir + "/rank" + std::to_string(r);
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    out.err += "--- rank " + std::to_string(r) + " (exit " + std::to_string(out.codes[r]) + ")\n" +
               ss.str();
    std::remove(path.c_str());
  }
  rmdir(dir.c_str());
  return out;
}

}  // namespace fobnccl::test
