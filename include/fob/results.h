// What a run measured, as held in memory and in the HDF5 file (docs/results-schema.md), and
// how a case's record is made from its plans (src/core/). Writing and reading the files:
// result_files.h (src/results/).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fob/case_key.h"
#include "fob/moe_load.h"
#include "fob/plan.h"

namespace fob {

inline constexpr const char* kSchema = "fobench/1";
// The newest schema version this fobench reads and writes. 2: a case may hold one period of a
// simulated ring (CaseResult::stored, attribute stored_ranks); only a file holding such a case
// says 2, so that every other file stays readable by a fobench that knows version 1 only, and
// one that knows only 1 refuses a file it would misread, saying the version is newer.
inline constexpr int kSchemaVersion = 2;
inline constexpr int kSchemaVersionAllRanks = 1;
// The device name the cuda model (tests/cuda_model: the CUDA stack's API run on the CPU) reports
// through cudaGetDeviceProperties; the cuda backend passes it on to /system devices, and its
// times are then never GPU times.
inline constexpr const char* kCudaModelDevice = "cuda model (CPU)";
// SystemInfo::timer as read from a file written before /system had a `timer` attribute.
inline constexpr const char* kTimerUnknown = "unknown (file predates the timer attribute)";
// Appended to an iteration's timer where the device started before the iteration's last
// launch (IterationTimes::gate_early): its step may hold launch time.
inline constexpr const char* kGateOpenedEarly = " (device started before the last launch)";

// Bounds on /system copy_engines and a case's transfer_sms beyond any real device's counts: a
// value past them is damage or a crafted file, refused by the readers.
inline constexpr int32_t kMaxDeviceUnits = 1 << 16;

// A task's label as the file stores it: a fixed-length string of up to kLabelChars characters,
// so that a TaskRecord is itself the row of the `tasks` compound dataset.
struct TaskLabel {
  static constexpr size_t kLabelChars = 63;
  char text[kLabelChars + 1] = {};

  TaskLabel() = default;
  TaskLabel(const std::string& s);  // NOLINT(google-explicit-constructor): a label is text
  TaskLabel(const char* s);         // NOLINT(google-explicit-constructor)
  operator std::string() const { return text; }  // NOLINT(google-explicit-constructor)
  bool empty() const { return text[0] == '\0'; }
  size_t size() const;
  bool operator==(const std::string& other) const { return other == text; }
};

// One row of the `tasks` compound dataset (padding rows have task = -1): what a plan's task is,
// a pure function of the case (task_records() below builds them from the case's plans).
struct TaskRecord {
  int32_t rank = 0;
  int32_t task = -1;
  int8_t stream = 0;  // StreamId; an HDF5 enum in the file
  int8_t kind = 0;    // TaskKind; an HDF5 enum in the file
  int32_t peer = -1;  // send peer for transfers, -1 otherwise
  int64_t bytes = 0;
  double flops = 0;
  TaskLabel label;
};

// A dependency edge: on `rank`, task `task` waits for task `on`.
struct DepRecord {
  int32_t rank = 0;
  int32_t task = 0;
  int32_t on = 0;
};

// A measured (or simulated) case: what it is (its CaseKey) and what was taken.
struct CaseResult : CaseKey {
  std::string id;  // group name under /cases, e.g. "0003"
  int32_t iters = 0;
  int32_t warmup = 0;
  int32_t verified = -1;  // 1 passed, 0 failed, -1 not checked
  double max_abs_err = 0;
  // --auto-slices: the counts tried and their medians, when this case's count was chosen so.
  std::string auto_slices;
  // The timed iterations of each round taken so far, in order (they sum to iters): the rounds
  // are the units that ran apart in time, which compare resamples. Files from before rounds
  // were recorded read as one round.
  std::vector<int32_t> round_iters;
  // Per round, the slowest rank's host speed probe (speed_probe.h) around the round's slot, in
  // seconds; NaN where a round has none, empty where no round recorded one (older files).
  std::vector<double> round_probe;

  // The ranks the arrays below hold, 0 for all `world` of them. A simulation of a ring whose
  // ranks are rotations of one another (sim.h) holds ranks 0..stored-1 only: rank r ran exactly
  // as rank r % stored did, with its peers moved by r - r % stored.
  int32_t stored = 0;
  int32_t max_tasks = 0;          // task dimension of the arrays below
  std::vector<TaskRecord> tasks;  // [ranks()][max_tasks]
  std::vector<DepRecord> deps;
  std::vector<double> step_seconds;  // [iters][ranks()]: each rank's own step time
  std::vector<double> task_start;    // [iters][ranks()][max_tasks], NaN padded
  std::vector<double> task_end;
  // The timers that took this case's task times, and which one took each rank's iteration
  // ([iters][ranks()], an index into `timers`): a cuda iteration whose kernel activity CUPTI
  // could not deliver was timed by its stream events, and says so. Both empty where nothing was
  // recorded (simulated cases, files from before): /system's timer took every time.
  std::vector<std::string> timers;
  std::vector<int8_t> iteration_timer;
  // Host seconds each rank spent launching each timed iteration ([iters][ranks()], NaN where
  // not measured), which the steps above do not hold; empty where not recorded.
  std::vector<double> launch_seconds;
  // How the hardware ran the case, each rank's account ("rank R: key=value", Backend::
  // case_facts): communicator and its channels, transports, registration, clocks. Empty where
  // nothing was said.
  std::vector<std::string> facts;
  // The SMs the case's transfers took on rank 0 (Backend::transfer_sms): 0 where copy engines
  // or a host thread moved the data; -1 where not known (the CPU backend, simulated cases, files
  // from before).
  int32_t transfer_sms = -1;
  // A case whose workload has experts: how its router spread the tokens (moe_load.h); empty
  // for other cases, for a simulated ring's one period, and for a case a journal of format 6
  // held.
  MoeLoad moe_load;

  // The case's timer in words: its one timer, or "mixed: A in 37 of 40 rank-iterations, B in
  // 3"; empty where not recorded.
  std::string timer_text() const;
  // Whether timers and iteration_timer agree with each other and with iters and ranks().
  bool timers_match() const;
  // Whether launch_seconds is empty or holds [iters][ranks()].
  bool launches_match() const {
    return launch_seconds.empty() ||
           launch_seconds.size() == static_cast<size_t>(iters) * static_cast<size_t>(ranks());
  }

  // How many ranks the arrays hold: `stored`, or `world` when 0.
  int ranks() const { return stored > 0 ? stored : world; }
  // Whether `stored` is 0 or a period of the world (it divides it).
  bool stored_fits() const {
    return stored == 0 || (stored > 0 && world > 0 && world % stored == 0);
  }
  // Where (rank, task) is in `tasks`, and (iter, rank, task) in task_start and task_end.
  size_t task_index(int rank, int task) const {
    return static_cast<size_t>(rank) * static_cast<size_t>(max_tasks) + static_cast<size_t>(task);
  }
  size_t timing_index(int iter, int rank, int task) const {
    return static_cast<size_t>(iter) * static_cast<size_t>(ranks()) *
               static_cast<size_t>(max_tasks) +
           task_index(rank, task);
  }
  const TaskRecord& task_record(int rank, int task) const { return tasks[task_index(rank, task)]; }
  double start(int iter, int rank, int task) const {
    return task_start[timing_index(iter, rank, task)];
  }
  double end(int iter, int rank, int task) const {
    return task_end[timing_index(iter, rank, task)];
  }
  // Whether the arrays have the sizes world, iters and max_tasks say (a damaged or hand-made
  // case may not): the accessors above assume it.
  bool arrays_match() const;
  // round_iters, or one round of every iteration for a case assembled without rounds.
  std::vector<int32_t> rounds() const;
  // Timed iterations whose task times the arrays hold (a damaged file may hold fewer).
  int timed_iters() const;

  double step(int iter) const;  // the step's time: slowest rank
};

struct SystemInfo {
  std::string backend, transport;
  int32_t world_size = 0;
  // The device's copy engines (Backend::copy_engines); -1 where not known or not a GPU.
  int32_t copy_engines = -1;
  std::string hostnames;  // comma separated, one per rank
  std::string devices;    // comma separated, one per rank
  std::string mpi_version, nccl_version, cuda_version, blas;
  std::string link_emulation;  // "none" or "emulated: 10 Gbit/s, 5 us latency"
  // How task_start/task_end (and so every task-derived metric) were taken: Backend::timer(),
  // or "simulated (...)". Times from different timers are not comparable like for like. In a
  // file it is what took the cases' times (files_timer()): not the timer the run asked for
  // where a case's iterations fell back to another.
  std::string timer;
  // The timer the run asked for (Backend::timer()): what a resumed run must match. Read from a
  // file without it, the same as `timer`.
  std::string timer_requested;
  const std::string& requested_timer() const {
    return timer_requested.empty() ? timer : timer_requested;
  }
  std::string env;    // KEY=VALUE lines
  std::string notes;  // caveats about how the numbers were taken, e.g. oversubscription
  // Each rank's Backend::run_facts(), "rank R: key=value" lines: libraries, GPU limits, links.
  std::string hardware;
  // Non-empty for `fobench sim` files: the machine file the times were predicted with.
  std::string simulated;

  // Whether the cuda backend ran on the cuda model rather than a GPU.
  bool on_cuda_model() const { return devices.find(kCudaModelDevice) != std::string::npos; }
  // Whether the link was emulated: every report and picture says so where it cannot be missed.
  bool link_emulated() const { return !link_emulation.empty() && link_emulation != "none"; }
};

struct RunInfo {
  std::string git_commit, created_utc, command_line, config_yaml;
  // `fobench sim --tune`: the file holds every parameter of each strategy side by side, and the
  // speedup picture draws each strategy at its fastest (root attribute `tuned`).
  bool tuned = false;
  // 16 random hex digits drawn when a run starts (a resume keeps its file's): every journal
  // record carries it, so that a record of another run is never taken for one of this run.
  std::string run_id{};
};

// How a case's ranks compare (nccl-tests' -a: min, average and max over ranks; rank_stats.h).
struct RankSpread {
  // Over ranks, of each rank's median own step time (seconds); the rank with the largest.
  double t_min = 0, t_avg = 0, t_max = 0;
  int32_t slowest_rank = -1;
  // Over ranks, of each rank's GEMM rate (flop/s): the flops of its compute-stream tasks over
  // their time, median over the iterations; the rank with the lowest. NaN without compute.
  double gemm_min = 0, gemm_avg = 0, gemm_max = 0;
  int32_t slowest_gemm_rank = -1;
  // Whether every rank's compute-stream tasks hold the same flops: only then is one rank's GEMM
  // rate a measure of its core against the others' (under moe a rank with fewer tokens runs
  // smaller GEMMs, slower by their shape, not by its core).
  bool same_gemm_work = true;
  // A case with experts: over ranks, of each rank's expert time (its gemm and glu tasks on the
  // compute stream summed, median over the iterations); the rank with the largest, and that
  // rank's share of the routed tokens (CaseResult::moe_load). NaN and -1 otherwise.
  double expert_avg = std::numeric_limits<double>::quiet_NaN();
  double expert_max = std::numeric_limits<double>::quiet_NaN();
  int32_t hot_expert_rank = -1;
  double hot_token_share = std::numeric_limits<double>::quiet_NaN();
};

// What a case's summary row takes from that case alone (metrics.h, case_stats).
struct CaseStats {
  double t_median = 0, t_min = 0, t_p90 = 0, t_p99 = 0, t_cv = 0;  // NaN: a step is unknown
  double t_ci_low = 0, t_ci_high = 0;  // the median's 95% interval (trust.h)
  double compute_busy = 0;             // compute_busy_median()
  double rank_flops = 0;               // the busiest rank's flops per step
  double concurrency = 0;              // measured_concurrency()
  double sent_bytes = 0;               // step_sent_bytes(): what prices algbw and busbw
  std::string hardware_doubt;          // throttle_doubt() (hardware.h), "" where none
  RankSpread ranks;                    // rank_spread() (rank_stats.h)
  // Each round's median step, and whether the round ran in a slow phase (its probe past
  // kSlowPhaseFactor times the case's median probe, or its median past kSlowRoundFactor times
  // the lower quartile: speed_probe.h); what paired ratios are taken over (metrics.h).
  std::vector<double> round_medians;
  std::vector<char> round_slow;
};

struct ResultFile {
  RunInfo run;
  SystemInfo system;
  std::vector<CaseResult> cases;
  // Empty, or case_stats() of each case: then summarize(file) reads these, and the cases may
  // hold no timings (what `fobench sim` keeps of a case it reports without writing it).
  std::vector<CaseStats> stats;
};

// The case a user names on the command line (`option`, e.g. "--case"): its id ("0003"), its
// number (3: the id's value, the row of /summary and of the report's CSV), or its strategy as
// the report prints it ("flash", "slicing:4"; "slicing" while the file has one slice count).
// InputError naming the valid choices when none or several cases match.
const CaseResult& select_case(const ResultFile& file, const std::string& selector,
                              const std::string& option);

// A case's descriptive fields (id, workload, strategy, shape, dtype, world) from one of its
// plans; the executor and the simulator both start their results from it.
CaseResult case_from_plan(const Plan& plan, int world, const std::string& id);

// The case as a summary row names it (its key, id, iters, rounds and verification) without
// its task table and timings: what is kept of a case once its CaseStats are taken.
CaseResult described(const CaseResult& c);

// The `tasks` and `deps` rows of a case from its plans, one per rank in rank order: the task
// table is a pure function of the case, so the executor builds it on rank 0 rather than
// gathering it, and the simulator builds the same one.
void set_task_table(CaseResult& result, const std::vector<const Plan*>& plans);

// One round's timings of a case, laid out as CaseResult's arrays: [iters][ranks()] step times and
// [iters][ranks()][max_tasks] task times.
struct RoundTimes {
  int iters = 0;
  std::vector<double> step_seconds, task_start, task_end;
  std::vector<std::string> timers;     // [iters][ranks()]: who took each; empty: not recorded
  std::vector<double> launch_seconds;  // [iters][ranks()]; empty: not recorded
  double probe = std::numeric_limits<double>::quiet_NaN();  // the round's slot's speed probe
};

// What took the times of a file's cases: `requested` where no case recorded another timer, the
// one other timer where every recorded iteration used it, else "mixed: ..." naming them.
std::string files_timer(const std::string& requested, const std::vector<CaseResult>& cases);
// A round of `iters` iterations for `result`'s task table, every time NaN until filled in.
RoundTimes empty_round(const CaseResult& result, int iters);
// Appends a round to `result` (its iterations, and round_iters); logic_error when its arrays do
// not match the task table.
void append_round(CaseResult& result, const RoundTimes& round);

// The peer a task record names: the send peer, else the receive peer, for transfers; else -1.
int32_t recorded_peer(const Task& task);

// The most SMs any of the cases' transfers took (CaseResult::transfer_sms); -1 where none says.
int32_t files_transfer_sms(const std::vector<CaseResult>& cases);
// The file's transport with what its transfers ran on, as the reports print it:
// "ce (copy engines: 3; transfers take 0 SMs)", "nccl (copy engines: 3; transfers take up to 16
// SMs)"; the bare name where neither is known (the CPU backend).
std::string transport_text(const ResultFile& file);

// Why this run may not add its cases to `existing` (an interrupted file): the first of backend,
// transport, world size, link emulation, timer and every config setting (the seed, dtype,
// iterations, shapes, strategies, ...; not the output path) that differs, named with both
// values. Empty when they all agree.
std::string resume_mismatch(const ResultFile& existing, const RunInfo& run,
                            const SystemInfo& system);

}  // namespace fob
