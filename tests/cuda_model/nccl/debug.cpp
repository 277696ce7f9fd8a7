// NCCL's debug log (debug.h), following NCCL 2.28.9's src/debug.cc: ncclDebugInit's parsing of
// NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE, ncclDebugLog's line layout, and
// src/misc/param.cc's ncclLoadParam for the tunables.
#include "debug.h"

#include <cuda_runtime_api.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

namespace fobnccl::log {
namespace {

struct State {
  std::mutex mu;
  bool initialized = false;
  bool debug_set = false;  // NCCL_DEBUG was set at all
  Level level = kNone;
  // "Default debug sub-system mask" (ncclDebugInit): INIT, BOOTSTRAP, ENV.
  uint64_t mask = kInit | kBootstrap | kEnv;
  FILE* file = stdout;
  std::string host;
  int pid = 0;
};

State& state() {
  static State* instance = new State;  // logging may outlive static destruction
  return *instance;
}

Level parse_level(const char* text) {
  if (text == nullptr) return kNone;
  if (strcasecmp(text, "VERSION") == 0) return kVersion;
  if (strcasecmp(text, "WARN") == 0) return kWarn;
  if (strcasecmp(text, "INFO") == 0) return kInfo;
  if (strcasecmp(text, "ABORT") == 0) return kAbort;
  if (strcasecmp(text, "TRACE") == 0) return kTrace;
  return kNone;
}

uint64_t subsys_bit(const std::string& name) {
  static const std::pair<const char*, uint64_t> kNames[] = {{"INIT", kInit},
                                                            {"COLL", kColl},
                                                            {"P2P", kP2p},
                                                            {"SHM", kShm},
                                                            {"NET", kNet},
                                                            {"GRAPH", kGraph},
                                                            {"TUNING", kTuning},
                                                            {"ENV", kEnv},
                                                            {"ALLOC", kAlloc},
                                                            {"CALL", kCall},
                                                            {"PROXY", kProxy},
                                                            {"NVLS", kNvls},
                                                            {"BOOTSTRAP", kBootstrap},
                                                            {"REG", kReg},
                                                            {"PROFILE", kProfile},
                                                            {"RAS", kRas},
                                                            {"ALL", kAll}};
  for (const auto& [known, bit] : kNames) {
    if (strcasecmp(name.c_str(), known) == 0) return bit;
  }
  return 0;  // "Unknown names are ignored silently"
}

// NCCL_DEBUG_SUBSYS: a list replaces the default; a leading '^' starts from everything and
// removes the list.
uint64_t parse_mask(const char* text, uint64_t fallback) {
  if (text == nullptr) return fallback;
  const bool invert = text[0] == '^';
  uint64_t mask = invert ? ~uint64_t{0} : 0;
  std::string list = invert ? text + 1 : text;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const uint64_t bit = subsys_bit(list.substr(start, comma - start));
    mask = invert ? mask & ~bit : mask | bit;
    start = comma + 1;
  }
  return mask;
}

// gethostname() cut at the first '.' (getHostName(..., '.')).
std::string short_host() {
  char name[1024] = "unknown";
  if (gethostname(name, sizeof name) != 0) std::snprintf(name, sizeof name, "unknown");
  name[sizeof name - 1] = '\0';
  return std::string(name).substr(0, std::string(name).find('.'));
}

// NCCL_DEBUG_FILE: %h the host, %p the pid, %% a percent sign, any other %x kept as it is.
std::string expand_file(const char* pattern, const State& s) {
  std::string path;
  for (size_t i = 0; pattern[i] != '\0'; ++i) {
    if (pattern[i] != '%' || pattern[i + 1] == '\0') {
      path += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == '%') {
      path += '%';
    } else if (c == 'h') {
      path += s.host;
    } else if (c == 'p') {
      path += std::to_string(s.pid);
    } else {
      path += '%';
      path += c;
    }
  }
  return path;
}

void init_locked(State& s) {
  const char* debug = std::getenv("NCCL_DEBUG");
  s.debug_set = debug != nullptr;
  s.level = parse_level(debug);
  s.mask = parse_mask(std::getenv("NCCL_DEBUG_SUBSYS"), s.mask);
  s.host = short_host();
  s.pid = getpid();
  // "don't bother unless the NCCL_DEBUG level is > VERSION"; a file that cannot be opened
  // leaves the output on stdout.
  const char* file = std::getenv("NCCL_DEBUG_FILE");
  if (s.level > kVersion && file != nullptr) {
    const std::string path = expand_file(file, s);
    if (!path.empty()) {
      if (FILE* opened = std::fopen(path.c_str(), "w")) {
        setlinebuf(opened);
        s.file = opened;
      }
    }
  }
  s.initialized = true;
}

State& ready() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) init_locked(s);
  return s;
}

int thread_id() {
  thread_local const int tid = static_cast<int>(syscall(SYS_gettid));
  return tid;
}

// "[%d]": the calling thread's current CUDA device.
int cuda_device() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) device = 0;
  return device;
}

// One line, as ncclDebugLog builds it: at most 1024 bytes with its newline, one fwrite under
// the lock.
void emit(State& s, const std::string& head, const char* fmt, va_list args) {
  char buffer[1024];
  size_t len = std::min(head.size(), sizeof buffer - 1);
  std::memcpy(buffer, head.data(), len);
  const int wrote = std::vsnprintf(buffer + len, sizeof buffer - len, fmt, args);
  len = std::min(len + static_cast<size_t>(wrote > 0 ? wrote : 0), sizeof buffer - 1);
  buffer[len++] = '\n';
  std::lock_guard lock(s.mu);
  std::fwrite(buffer, 1, len, s.file);
}

void emitf(State& s, const std::string& head, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  emit(s, head, fmt, args);
  va_end(args);
}

std::string prefix(const State& s) {
  return s.host + ":" + std::to_string(s.pid) + ":" + std::to_string(thread_id()) + " [" +
         std::to_string(cuda_device()) + "] ";
}

}  // namespace

Level level() {
  return ready().level;
}

void info(uint64_t flags, const char* fmt, ...) {
  State& s = ready();
  if (s.level < kInfo || (flags & s.mask) == 0) return;
  va_list args;
  va_start(args, fmt);
  emit(s, prefix(s) + "NCCL INFO ", fmt, args);
  va_end(args);
}

void version(const char* fmt, ...) {
  State& s = ready();
  if (s.level < kVersion) return;
  va_list args;
  va_start(args, fmt);
  emit(s, "", fmt, args);
  va_end(args);
}

// WARN lines start with a newline and, by default, the date and time
// (NCCL_DEBUG_TIMESTAMP_LEVELS defaults to WARN, NCCL_DEBUG_TIMESTAMP_FORMAT to "[%F %T] ").
// Where NCCL_DEBUG is unset NCCL prints nothing; the model then says it on stderr, as it always
// has, so that a failing call is never silent.
void warn(const std::string& text, std::source_location where) {
  State& s = ready();
  if (!s.debug_set) {
    std::fprintf(stderr, "[cuda model nccl] WARN %s\n", text.c_str());
    return;
  }
  if (s.level < kWarn) return;
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "[%F %T] ", &local);
  std::string file = where.file_name();
  file = file.substr(file.rfind('/') + 1);
  // Appended piece by piece: GCC 12 misreads a chain of operator+ here (-Wrestrict).
  std::string head = "\n";
  head.append(stamp).append(prefix(s)).append(file).append(":");
  head.append(std::to_string(where.line())).append(" NCCL WARN ");
  emitf(s, head, "%s", text.c_str());
}

int64_t param(const char* name, int64_t fallback) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, int64_t>;
  std::lock_guard lock(mu);
  const std::string env = std::string("NCCL_") + name;
  if (const auto found = cache->find(env); found != cache->end()) return found->second;
  int64_t value = fallback;
  const char* text = std::getenv(env.c_str());
  if (text != nullptr && std::strlen(text) > 0) {
    errno = 0;
    value = std::strtoll(text, nullptr, 0);
    if (errno != 0) {
      value = fallback;
      info(kAll, "Invalid value %s for %s, using default %lld.", text, env.c_str(),
           static_cast<long long>(fallback));
    } else {
      info(kEnv, "%s set by environment to %lld.", env.c_str(), static_cast<long long>(value));
    }
  }
  (*cache)[env] = value;
  return value;
}

}  // namespace fobnccl::log
