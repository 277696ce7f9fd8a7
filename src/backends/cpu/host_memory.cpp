#include "host_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace fob {
namespace {

// One number from a file such as memory.max; -1 when absent, unreadable or "max".
int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return -1;
  }
}

// The cgroup (v2) this process is in, from /proc/self/cgroup ("0::/path").
std::string cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "";
}

}  // namespace

int64_t host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  int64_t available = -1;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") available = kib * 1024;
  }
  if (available < 0) return -1;
  // A limit on this cgroup or any above it bounds the process.
  std::string dir = cgroup_dir();
  while (dir.size() > std::string("/sys/fs/cgroup").size()) {
    const int64_t limit = read_number(dir + "/memory.max");
    const int64_t used = read_number(dir + "/memory.current");
    if (limit >= 0 && used >= 0)
      available = std::min(available, std::max<int64_t>(0, limit - used));
    dir = dir.substr(0, dir.rfind('/'));
  }
  // cgroup v1 (older Slurm nodes): one limit for the memory controller's hierarchy.
  const int64_t v1_limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  const int64_t v1_used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  if (v1_limit >= 0 && v1_used >= 0 && v1_limit < (int64_t{1} << 60)) {
    available = std::min(available, std::max<int64_t>(0, v1_limit - v1_used));
  }
  return available;
}

}  // namespace fob
