// Helpers of the CUDA IPC tests: two ranks as two forked processes, each a fresh process for the
// runtime model (the test process itself initialises nothing), talking over two pipes; the
// driver's stream memory operations found with dlopen, as the cuda backend finds them.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace fobipc_test {

using MemOpFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);

struct Driver {
  MemOpFn wait = nullptr;
  MemOpFn write = nullptr;
};

inline Driver driver() {
  Driver out;
  void* lib = dlopen(FOB_MODEL_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return out;
  out.wait = reinterpret_cast<MemOpFn>(dlsym(lib, "cuStreamWaitValue32_v2"));
  out.write = reinterpret_cast<MemOpFn>(dlsym(lib, "cuStreamWriteValue32_v2"));
  return out;
}

inline CUdeviceptr word(void* base, size_t index = 0) {
  return reinterpret_cast<CUdeviceptr>(static_cast<uint32_t*>(base) + index);
}

// One end of the ranks' pipes: a rank sends to the other and receives from it. A receive after
// the other rank has ended returns false.
class Channel {
 public:
  Channel(int in, int out) : in_(in), out_(out) {}
  bool send(const void* data, size_t bytes) const {
    return write(out_, data, bytes) == static_cast<ssize_t>(bytes);
  }
  bool receive(void* data, size_t bytes) const {
    size_t got = 0;
    while (got < bytes) {
      const ssize_t n = read(in_, static_cast<char*>(data) + got, bytes - got);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    return true;
  }
  bool signal(char what) const { return send(&what, 1); }
  // Waits for the other rank's signal (false: it ended without sending one).
  bool await(char what) const {
    char got = 0;
    return receive(&got, 1) && got == what;
  }

 private:
  int in_;
  int out_;
};

struct Ranks {
  int codes[2] = {-1, -1};
  std::string errs[2];
  std::string all() const {
    return "--- rank 0 (exit " + std::to_string(codes[0]) + ")\n" + errs[0] + "--- rank 1 (exit " +
           std::to_string(codes[1]) + ")\n" + errs[1];
  }
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs body(rank, channel) in two processes (rank r on device r, FOB_MODEL_DEADLOCK_S=1); its
// return value is the rank's exit code. Each rank's stderr goes to a file read back after.
inline Ranks run_ranks(const std::function<int(int, const Channel&)>& body) {
  Ranks out;
  char dir[] = "/tmp/fobipc-XXXXXX";
  if (mkdtemp(dir) == nullptr) return out;
  int to1[2], to0[2];
  if (pipe(to1) != 0 || pipe(to0) != 0) return out;
  pid_t pids[2] = {-1, -1};
  for (int r = 0; r < 2; ++r) {
    const std::string err = std::string(dir) + "/rank" + std::to_string(r);
    pids[r] = fork();
    if (pids[r] != 0) continue;
    const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) dup2(fd, 2);
    setenv("FOB_MODEL_DEADLOCK_S", "1", 1);
    const Channel channel = r == 0 ? Channel(to0[0], to1[1]) : Channel(to1[0], to0[1]);
    close(r == 0 ? to0[1] : to1[1]);
    close(r == 0 ? to1[0] : to0[0]);
    cudaSetDevice(r);
    const int code = body(r, channel);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  for (const int fd : {to1[0], to1[1], to0[0], to0[1]}) close(fd);
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    out.codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string err = std::string(dir) + "/rank" + std::to_string(r);
    out.errs[r] = read_file(err);
    unlink(err.c_str());
  }
  rmdir(dir);
  return out;
}

}  // namespace fobipc_test
