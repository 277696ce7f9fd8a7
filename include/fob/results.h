// What a run measured, as held in memory and in the HDF5 file (DESIGN.md section 5).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fob/plan.h"

namespace fob {

class OutputLock;

inline constexpr const char* kSchema = "fobench/1";
inline constexpr int kSchemaVersion = 1;
// SystemInfo::timer as read from a file written before /system had a `timer` attribute.
inline constexpr const char* kTimerUnknown = "unknown (file predates the timer attribute)";

// One row of the `tasks` compound dataset (padding rows have task = -1).
struct TaskRecord {
  int32_t rank = 0;
  int32_t task = -1;
  int8_t stream = 0;  // StreamId
  int8_t kind = 0;    // TaskKind
  int32_t peer = -1;  // send peer for transfers, -1 otherwise
  int64_t bytes = 0;
  double flops = 0;
  std::string label;  // stored as a fixed-length string of up to 63 characters
};

// A dependency edge: on `rank`, task `task` waits for task `on`.
struct DepRecord {
  int32_t rank = 0;
  int32_t task = 0;
  int32_t on = 0;
};

struct CaseResult {
  std::string id;  // group name under /cases, e.g. "0003"
  std::string workload;
  std::string strategy;  // the spec as written
  int64_t batch = 0, seq = 0, hidden = 0, ffn = 0;
  int64_t heads = 0;  // attention heads (every workload records the shape's count)
  std::string dtype;
  int32_t world = 0;
  int32_t iters = 0;
  int32_t warmup = 0;
  int32_t verified = -1;  // 1 passed, 0 failed, -1 not checked
  double max_abs_err = 0;
  // --auto-slices: the counts tried and their medians, when this case's count was chosen so.
  std::string auto_slices;

  int32_t max_tasks = 0;          // task dimension of the arrays below
  std::vector<TaskRecord> tasks;  // [world * max_tasks]
  std::vector<DepRecord> deps;
  std::vector<double> step_seconds;  // [iters * world]: each rank's own step time
  std::vector<double> task_start;    // [iters * world * max_tasks], NaN padded
  std::vector<double> task_end;

  double step(int iter) const;  // the step's time: slowest rank
};

struct SystemInfo {
  std::string backend, transport;
  int32_t world_size = 0;
  std::string hostnames;  // comma separated, one per rank
  std::string devices;    // comma separated, one per rank
  std::string mpi_version, nccl_version, cuda_version, blas;
  std::string link_emulation;  // "none" or "emulated: 10 Gbit/s, 5 us latency"
  // How task_start/task_end (and so every task-derived metric) were taken: Backend::timer(),
  // or "simulated (...)". Times from different timers are not comparable like for like.
  std::string timer;
  std::string env;    // KEY=VALUE lines
  std::string notes;  // caveats about how the numbers were taken, e.g. oversubscription
  // Non-empty for `fobench sim` files: the machine file the times were predicted with.
  std::string simulated;

  // Whether the link was emulated: every report and picture says so where it cannot be missed.
  bool link_emulated() const { return !link_emulation.empty() && link_emulation != "none"; }
};

struct RunInfo {
  std::string git_commit, created_utc, command_line, config_yaml;
};

struct ResultFile {
  RunInfo run;
  SystemInfo system;
  std::vector<CaseResult> cases;
};

// Writes NAME.h5.partial, rewritten case by case, then renamed to NAME.h5 by finish().
// Refuses to start when NAME.h5 exists unless `force` (InputError). HDF5 only on rank 0.
// Writes a results file case by case. The file is built in memory and every flush replaces
// NAME.h5.partial whole (written beside it, synced, renamed over it), so a full disk, a signal
// or a crash during a write leaves the previous flush as it was: readable, resumable. A second
// run writing the same file is refused (OutputLock) before either file is touched.
class ResultWriter {
 public:
  // Starts NAME.h5.partial. InputError (before anything is measured) when the file may not or
  // cannot be written: it exists without `force`, another run holds it, or the directory does
  // not take the first flush.
  ResultWriter(const std::string& path, bool force, const RunInfo& run, const SystemInfo& sys);
  // Reopens an interrupted run's NAME.h5.partial to add cases to it (--resume).
  explicit ResultWriter(const std::string& partial_path);
  const std::vector<CaseResult>& cases() const { return cases_; }
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Writes the case (replacing an earlier version with the same id), refreshes /summary and
  // flushes to disk. RuntimeFault, with the flushed file untouched, when the write fails.
  void add_case(const CaseResult& result);
  void finish();  // renames .partial to the final name
  const std::string& final_path() const { return path_; }
  const std::string& partial_path() const { return partial_; }

 private:
  // Replaces the .partial with the in-memory file; `before_run` makes a failure bad input.
  void flush(const std::string& what, bool before_run);

  std::string path_, partial_;
  long long file_ = -1;  // hid_t of the in-memory file
  std::unique_ptr<OutputLock> lock_;
  std::vector<CaseResult> cases_;
  size_t cases_on_disk_ = 0;  // how many cases the .partial holds
};

// The file an interrupted NAME.h5.partial becomes when its run finishes; InputError when the
// name does not end in .partial.
std::string partial_target(const std::string& partial);

// A case's descriptive fields (id, workload, strategy, shape, dtype, world) from one of its
// plans; the executor and the simulator both start their results from it.
CaseResult case_from_plan(const Plan& plan, int world, const std::string& id);

// The peer a task record names: the send peer, else the receive peer, for transfers; else -1.
int32_t recorded_peer(const Task& task);

// Reads a file written by ResultWriter (final or .partial). Throws InputError when it is not a
// fobench file, has a newer schema, or cannot be opened.
ResultFile read_results(const std::string& path);

// Why this run may not add its cases to `existing` (an interrupted file): the first of backend,
// transport, world size, link emulation, timer and every config setting (the seed, dtype,
// iterations, shapes, strategies, ...; not the output path) that differs, named with both
// values. Empty when they all agree.
std::string resume_mismatch(const ResultFile& existing, const RunInfo& run,
                            const SystemInfo& system);

}  // namespace fob
