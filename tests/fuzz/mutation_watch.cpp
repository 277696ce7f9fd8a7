#include "mutation_watch.h"

#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace fob::fuzz {

namespace {

using Clock = std::chrono::steady_clock;

struct Watch {
  std::mutex mutex;
  std::vector<uint8_t> input;
  bool running = false;
  Clock::time_point since;
  pthread_t mutator{};
};

std::atomic<bool> stack_printed{false};

// Runs on the mutator's thread: where in HDF5 it is, for the report.
void print_stack(int) {
  __sanitizer_print_stack_trace();
  stack_printed = true;
}

Watch& watch() {
  static Watch w;
  return w;
}

// Writes the input and ends the run: the mutator's thread is inside HDF5, whose state no
// other thread may touch, so nothing else runs on the way out.
[[noreturn]] void give_up(const std::string& path, const Watch& w, long seconds) {
  std::signal(SIGUSR2, print_stack);
  pthread_kill(w.mutator, SIGUSR2);
  for (int i = 0; i < 50 && !stack_printed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::vector<uint8_t>& input = w.input;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  }
  std::fprintf(stderr,
               "fuzz: a mutation has run for %ld s (HDF5 on a file the mutator made); its "
               "input: %s\n",
               seconds, path.c_str());
  std::fflush(stderr);
  _exit(kMutationHangExit);
}

}  // namespace

void start_mutation_watch(const std::string& artifact_prefix, int limit_seconds) {
  const std::string path = artifact_prefix + "mutation-hang";
  std::thread([path, limit_seconds] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      Watch& w = watch();
      std::lock_guard<std::mutex> lock(w.mutex);
      if (!w.running) continue;
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - w.since).count();
      if (seconds >= limit_seconds) give_up(path, w, static_cast<long>(seconds));
    }
  }).detach();
}

void mutation_started(const uint8_t* data, size_t size) {
  Watch& w = watch();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.input.assign(data, data + size);
  w.running = true;
  w.since = Clock::now();
  w.mutator = pthread_self();
}

void mutation_done() {
  Watch& w = watch();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.running = false;
}

}  // namespace fob::fuzz
