// The run's watchdog: no step that waits for other ranks (a barrier, a gather, a broadcast, a
// verification's reduction, MPI_Finalize, setting up the backend) may take longer than
// --timeout. A rank that a step waits for may be stopped (SIGSTOP, a debugger), wedged or
// lost, and then a blocking MPI call never returns, so the main thread cannot notice by itself:
// a thread watches the step instead and ends the process with exit 3, naming the rank and what
// it waited for. The launcher (mpirun, srun --kill-on-bad-exit) then ends the other ranks.
#pragma once

#include <string>

namespace fob::watchdog {

// Starts the watchdog thread for this rank (once; later calls change the timeout, which is at
// least 1 s however short --timeout is). Until it
// is started, a Wait watches nothing, which is what unit tests that call the executor want.
void start(int rank, int world, double timeout_s);

// Stops the thread (at exit; a Wait afterwards watches nothing).
void stop();

// One watched step: from construction to destruction the rank may wait at most the timeout.
// `what` says what it waits in ("the barrier before iteration 4"); the context set by Context
// says for what ("case 0003 (mlp flash)").
class Wait {
 public:
  explicit Wait(const std::string& what);
  // A step that may also include `allowance_s` of known work on the awaited rank (rank 0
  // writing a case to disk): the rank waits at most the timeout plus the allowance.
  Wait(const std::string& what, double allowance_s);
  ~Wait();
  Wait(const Wait&) = delete;
  Wait& operator=(const Wait&) = delete;

 private:
  bool armed_ = false;
};

// What the rank is working on, named in a fault message; restored when it goes out of scope.
class Context {
 public:
  explicit Context(const std::string& what);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  std::string previous_;
};

// For tests: FOB_TEST_STOP=RANK:TEXT makes rank RANK stop itself (SIGSTOP) where it reaches a
// step whose description contains TEXT, so that a test can stop a rank at a chosen moment
// instead of at a moment chosen by a timer. Every Wait passes here; so do the writes.
void test_stop_point(const std::string& what);

}  // namespace fob::watchdog
