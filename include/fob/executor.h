// The harness: runs a plan on a backend for warm-up and timed iterations, verifies its output,
// and gathers every rank's timings to rank 0.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "fob/backend.h"
#include "fob/plan.h"
#include "fob/results.h"

namespace fob {

struct ExecOptions {
  int iters = 20;
  int warmup = 2;
  // Iterations are spread over this many rounds; in each round every case runs its share, so
  // slow drifts of a shared machine fall on all cases alike. 1 runs the cases one by one.
  int rounds = 1;
  double timeout_s = 300;
  bool verify = true;
  uint64_t seed = 1;
  // When set, rank 0 prints "<label> <strategy>: iteration i, running median" to stderr every
  // few seconds.
  std::string progress_label;
  // The backend runs its GEMMs in the fast math mode: verified within that mode's bound.
  bool fast_math = false;
};

class Executor {
 public:
  Executor(Backend& backend, MPI_Comm comm);

  // Called on every rank after each case's share of a round, with that case as measured so far
  // (complete on rank 0 only).
  using CaseCallback = std::function<void(const CaseResult& measured, int round, int rounds)>;

  // Runs the cases of one shape: their timed iterations are spread over options.rounds rounds,
  // every case running its share in each; each case is verified before its first share and
  // again after its last one.
  // Results are complete on rank 0; other ranks get the case fields and the verification
  // outcome. Verification failures are printed by the failing rank.
  std::vector<CaseResult> run_cases(const std::vector<const Plan*>& plans,
                                    const std::vector<std::string>& ids, const ExecOptions& options,
                                    const CaseCallback& after_slot = {});
  CaseResult run_case(const Plan& plan, const ExecOptions& options, const std::string& id);

 private:
  // One rank's measurements of one case in the current round, in iteration order.
  struct Samples {
    std::vector<double> steps, starts, ends;
    std::vector<std::string> timers;  // the timer that took each iteration's times
    std::vector<double> launches;     // IterationTimes::launch of each iteration
    std::vector<double> slowest;      // the slowest rank's step, when progress is printed
    double probe = 0;                 // this rank's slowest speed probe around the slot
    // Summed over the case's slots so far: the host's busy CPU, this process's, and the wall
    // time (HostCpu), for the share of the host other work took while the case ran.
    double busy = 0, own = 0, wall = 0, steal = 0;
    bool busy_known = true;

    // The per-iteration samples, which rank 0 has gathered by the end of each slot.
    void clear_iterations() {
      steps.clear();
      starts.clear();
      ends.clear();
      timers.clear();
      launches.clear();
    }
  };

  // One iteration, run again where its times could not be taken (IterationTimes::retry).
  IterationTimes iterate(const Plan& plan, double timeout_s, bool timed);
  // Every rank's Backend::case_facts(), "rank R: key=value", on rank 0 (empty elsewhere).
  std::vector<std::string> gather_facts(const Plan& plan, const Samples& samples);
  // "host_others_cpus=X": the host's CPUs other work kept busy during the case's slots, from
  // one rank of each host (Samples::busy less every local rank's own CPU time), with
  // "host_steal_cpus=Y" (of the busy time, what a hypervisor gave other guests) and
  // "host_loadavg=Z" (the one-minute load average after the case's last slot); empty where
  // /proc/stat could not be read or the slots lasted under half a second. Collective.
  std::vector<std::string> host_load_facts(const Samples& samples);
  // The barrier after rank 0 wrote a slot of `iters` iterations of a case.
  void wait_for_the_write(const Plan& plan, int iters, const std::string& id);
  // Poisons the outputs, runs one iteration and checks it; `when` names the moment in messages.
  void verify_case(const Plan& plan, const ExecOptions& options, const char* when,
                   CaseResult& result);
  int verify(const Plan& plan, const ExecOptions& options, const std::string& id, const char* when,
             double* max_err);
  void time_iterations(const Plan& plan, const ExecOptions& options, int iters, Samples& samples);
  void time_slot(const Plan& plan, const ExecOptions& options, int warmup, int iters,
                 Samples& samples);
  // Collective: every rank's timings of this round appended to `result` on rank 0 (its task
  // table is built there from the case, not gathered).
  void gather(const Plan& plan, const Samples& samples, CaseResult& result);
  const std::vector<double>& expected(const Plan& plan, const OutputCheck& check, uint64_t seed);

  Backend& backend_;
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  // What the oracle output of a check depends on: the whole shape (a sweep of any shape field
  // gives each point its own), the world and rank, the inputs' period and seed.
  struct OracleKey {
    Workload workload = nullptr;
    CheckKind check = {};
    Shape shape;
    int world = 0, rank = 0;
    int64_t input_period = 0;
    uint64_t seed = 0;
    bool operator==(const OracleKey& o) const {
      return workload == o.workload && check == o.check && shape == o.shape && world == o.world &&
             rank == o.rank && input_period == o.input_period && seed == o.seed;
    }
  };
  std::vector<std::pair<OracleKey, std::vector<double>>> oracle_cache_;
  std::map<const Plan*, std::vector<std::vector<int>>> waits_;  // per task, other-stream deps
};

}  // namespace fob
