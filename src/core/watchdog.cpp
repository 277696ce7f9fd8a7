#include "watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "fob/types.h"
#include "stop_signals.h"

namespace fob::watchdog {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMinTimeoutSeconds = 1.0;

struct State {
  std::mutex mutex;
  std::condition_variable wake;
  bool running = false, quit = false, armed = false;
  int rank = 0, world = 1;
  double timeout_s = 300;
  double allowance_s = 0;  // the armed step's allowance beyond the timeout
  Clock::time_point since, deadline;
  std::string what, context;
};

// Never destroyed: the watchdog thread is detached and may still look at it while the process
// exits, after static destructors would have run.
State& state() {
  static State* s = new State;
  return *s;
}

std::string waited_for(const State& s) {
  if (s.world == 2) return "rank " + std::to_string(1 - s.rank);
  return "the other " + std::to_string(s.world - 1) + " ranks (one or more did not arrive)";
}

[[noreturn]] void fire(State& s) {
  const double waited = std::chrono::duration<double>(Clock::now() - s.since).count();
  std::string message = "fobench: rank " + std::to_string(s.rank) + ": waited " +
                        std::to_string(static_cast<long long>(waited + 0.5)) + " s (--timeout" +
                        (s.allowance_s > 0 ? " and " + std::to_string(std::lround(s.allowance_s)) +
                                                 " s allowed for its work"
                                           : std::string()) +
                        ") for " + waited_for(s) + " in " + s.what;
  if (!s.context.empty()) message += " (" + s.context + ")";
  message += ": a rank that does not arrive is stopped, wedged or lost; ending the run";
  const std::string kept = stop::note();  // what the rank keeps, as after a SIGTERM
  if (!kept.empty()) message += "; " + kept;
  message += "\n";
  // The main thread is inside a blocking MPI call that may never return, so MPI_Abort (which
  // MPI_THREAD_SERIALIZED does not allow from here anyway) is no option: leave at once and let
  // the launcher end the other ranks.
  if (write(STDERR_FILENO, message.data(), message.size()) < 0) {
    // Nothing left to tell it to.
  }
  _exit(kExitRuntimeFault);
}

void watch() {
  State& s = state();
  std::unique_lock lock(s.mutex);
  while (!s.quit) {
    // Unarmed, sleep one timeout: a step armed meanwhile has a later deadline than this wake-up,
    // so a Wait never needs to notify the thread.
    const auto idle = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(s.timeout_s));
    s.wake.wait_until(lock, s.armed ? s.deadline : idle);
    if (s.quit) break;
    if (s.armed && Clock::now() >= s.deadline) fire(s);
  }
}

}  // namespace

void start(int rank, int world, double timeout_s) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.rank = rank;
  s.world = world;
  // --timeout may be a millisecond, to bound the iterations of a tiny case; MPI_Init or a
  // barrier on a loaded node legitimately takes longer than that.
  s.timeout_s = std::max(timeout_s, kMinTimeoutSeconds);
  s.quit = false;
  if (!s.running) {
    s.running = true;
    std::thread(watch).detach();
  }
  s.wake.notify_all();
}

void stop() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.quit = true;
  s.running = false;
  s.wake.notify_all();
}

Wait::Wait(const std::string& what) : Wait(what, 0) {}

Wait::Wait(const std::string& what, double allowance_s) {
  test_stop_point(what);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.running || s.armed) return;  // an enclosing Wait already bounds this one
  s.armed = armed_ = true;
  s.what = what;
  s.allowance_s = allowance_s;
  s.since = Clock::now();
  s.deadline = s.since + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(s.timeout_s + allowance_s));
}

Wait::~Wait() {
  if (!armed_) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.armed = false;
}

Context::Context(const std::string& what) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  previous_ = s.context;
  s.context = what;
}

Context::~Context() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.context = previous_;
}

void test_stop_point(const std::string& what) {
  static const char* spec = std::getenv("FOB_TEST_STOP");
  if (!spec || !*spec) return;
  const std::string text(spec);
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return;
  if (what.find(text.substr(colon + 1)) == std::string::npos) return;
  if (std::atoi(text.substr(0, colon).c_str()) != state().rank) return;
  raise(SIGSTOP);
}

}  // namespace fob::watchdog
