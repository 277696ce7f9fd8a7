// `fobench run`: validate everything, then run every case and write results case by case.
#include <limits.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "backends/cpu/host_memory.h"
#include "commands.h"
#include "core/stop_signals.h"
#include "core/watchdog.h"
#include "fob/backend.h"
#include "fob/cases.h"
#include "fob/executor.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/text_file.h"
#include "fob/trust.h"
#include "fob/version.h"
#include "fob/workload.h"
#include "link_ratio.h"
#include "run_support.h"
#include "system_info.h"

namespace fob {
namespace {

int finalize(int code) {
  {
    // MPI_Finalize synchronises with every rank: a stopped one would hold it forever.
    const watchdog::Wait wait("MPI_Finalize");
    MPI_Finalize();
  }
  watchdog::stop();
  return code;
}

// A runtime fault: named with the rank (once) and what the rank keeps, then exit 3 for all.
[[noreturn]] void fault(MPI_Comm comm, int rank, const std::exception& e) {
  std::string what = e.what();
  while (!what.empty() && (what.back() == ';' || what.back() == ' ')) what.pop_back();
  if (dynamic_cast<const std::bad_alloc*>(&e)) what = "out of host memory (std::bad_alloc)";
  const std::string self = "rank " + std::to_string(rank) + ":";
  if (what.find(self) == std::string::npos) what = self + " " + what;
  // A failed write's message already says what was kept: it is not told twice.
  const std::string kept = dynamic_cast<const WriteFault*>(&e) ? "" : stop::note();
  if (!kept.empty()) what += "; " + kept;
  std::fprintf(stderr, "fobench: %s\n", printable(what).c_str());
  std::fflush(stderr);
  MPI_Abort(comm, kExitRuntimeFault);
  _exit(kExitRuntimeFault);  // MPI_Abort does not return; should it, do not go on
}

// What a stopped run keeps: cases measured through their last round, and those with rounds
// still to come (`partly`), which a resume measures again.
std::string kept_note(const ResultWriter& writer, size_t partly) {
  const size_t whole = writer.cases().size() - std::min(partly, writer.cases().size());
  return std::to_string(whole) + " case(s)" +
         (partly ? " and " + std::to_string(partly) + " partly measured one(s)" : "") +
         " are kept in '" + writer.partial_path() + "' (fobench report reads it; --resume " +
         writer.partial_path() + " goes on)";
}

// The results file's directory, made if missing; a path no directory can be made at (a
// read-only or pseudo file system, a file in the way) is bad input before anything runs.
void create_output_directory(const std::string& output) {
  const std::filesystem::path out(output);
  if (!out.has_parent_path()) return;
  // Checked before the first directory is made, so a path too long to hold leaves none behind.
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(out, ec).string();
  if (absolute.size() >= PATH_MAX) {
    throw InputError("-o: a path of " + std::to_string(absolute.size()) +
                     " characters, longer than the system takes (PATH_MAX " +
                     std::to_string(PATH_MAX) + ")");
  }
  for (const auto& part : out) {
    if (part.string().size() > NAME_MAX) {
      throw InputError("-o: a name of " + std::to_string(part.string().size()) +
                       " characters in the path, longer than the system takes (NAME_MAX " +
                       std::to_string(NAME_MAX) + ")");
    }
  }
  std::filesystem::create_directories(out.parent_path(), ec);
  if (ec) {
    throw InputError("-o '" + output + "': cannot create the directory '" +
                     out.parent_path().string() + "': " + ec.message());
  }
}

// Rank 0 writes NAME.h5 from its journal while the others would wait in MPI_Finalize: that is
// rank 0 working, so they wait for it here with an allowance for the write on top of --timeout
// (10 s, and 5 MB/s for every case's task times: the journal is read back and the file written).
void wait_for_the_finished_file(MPI_Comm comm, const std::vector<std::vector<Plan>>& plans,
                                int world, int iters) {
  double bytes = 0;
  for (const auto& group : plans) {
    for (const Plan& plan : group) bytes += 16.0 * (plan.tasks.size() + 1) * world * iters;
  }
  const watchdog::Wait wait("rank 0 writing the finished results file", 10.0 + bytes / 5e6);
  MPI_Barrier(comm);
}

// This rank and the world size as the launcher tells them before MPI_Init (Open MPI, PMIx,
// Slurm, MPICH's PMI); rank 0 of 1 when started alone.
struct LaunchRank {
  int rank = 0, world = 1;
};

LaunchRank launch_rank() {
  LaunchRank out;
  auto first = [](std::initializer_list<const char*> names, int fallback) {
    for (const char* name : names) {
      if (const char* value = std::getenv(name)) return std::atoi(value);
    }
    return fallback;
  };
  out.rank = first({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK"}, 0);
  out.world = first({"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"}, 1);
  return out;
}

// --timeout from the command line, else from the config file if this rank can read it, else
// the default: what bounds MPI_Init and the config's broadcast, before the ranks agree on it.
double early_timeout(const RunArgs& args) {
  try {
    return load_config(args, read_config_file).timeout;
  } catch (const std::exception&) {
    return Config().timeout;  // rank 0 reports the problem once the ranks can agree on it
  }
}

// Bad input that only this rank can see (its own memory): it reports it itself, where other
// bad input is reported once, by rank 0.
class RankInputError : public InputError {
 public:
  using InputError::InputError;
};

// What the phases of a run fill in, in order.
struct Run {
  explicit Run(const RunArgs& a) : args(a) {}
  const RunArgs& args;
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, world = 1;
  Config config;
  std::vector<Config> points;
  // One group per point of the sweep; a group's cases run interleaved, groups one after another.
  std::vector<std::vector<CaseSpec>> groups;
  int plan_world = 1;  // the world the plans are for (--world with --dry-run)
  RunInfo run_info;
  std::unique_ptr<Backend> backend;
  std::vector<std::vector<Plan>> plans;  // this rank's, per group
  RankPlaces places;
  SystemInfo system;
  std::unique_ptr<ResultWriter> writer;
  std::vector<int> skip;  // per case across the sweep: already finished in a resumed file
};

// The one mapping from what a phase threw to how the run ends. Before anything is measured, bad
// input ends every rank with exit 2 after MPI_Finalize, reported by rank 0 (or by the rank that
// alone can see it); once cases run, every error is a runtime fault: exit 3 for all, named by
// its rank. Returns the exit code, or nothing when the phase completed.
enum class Stage { before_measuring, measuring };
std::optional<int> run_phase(Run& run, Stage stage, const std::function<void()>& phase) {
  try {
    phase();
    return std::nullopt;
  } catch (const InputError& e) {
    if (stage == Stage::measuring) fault(run.comm, run.rank, e);
    if (run.rank == 0 || dynamic_cast<const RankInputError*>(&e)) {
      std::fprintf(stderr, "fobench: error: %s\n", printable(e.what()).c_str());
    }
    run.backend.reset();
    return finalize(kExitBadInput);
  } catch (const std::exception& e) {
    fault(run.comm, run.rank, e);
  }
}

// MPI_Init waits for every rank too: the watchdog starts before it, with the rank the launcher
// gives and the timeout the command line and config file give, as far as this rank can tell
// before the ranks talk. Returns whether the library runs threads as fobench needs.
bool start_mpi(Run& run) {
  const LaunchRank launched = launch_rank();
  stop::install(launched.rank);
  watchdog::start(launched.rank, launched.world, early_timeout(run.args));
  int provided = 0;
  {
    const watchdog::Wait wait("MPI_Init");
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  }
  MPI_Comm_rank(run.comm, &run.rank);
  MPI_Comm_size(run.comm, &run.world);
  MPI_Comm_set_errhandler(run.comm, MPI_ERRORS_RETURN);
  stop::install(run.rank);
  watchdog::start(run.rank, run.world, early_timeout(run.args));
  if (run.rank == 0) stop::set_note("nothing was measured yet");
  return provided >= MPI_THREAD_SERIALIZED;
}

// Every rank must run the same cases; a mismatch would deadlock the first collective.
void check_same_settings(const Run& run, const std::string& effective) {
  uint64_t hash = fnv1a(effective), low = hash, high = hash;
  {
    const watchdog::Wait wait("the check that every rank holds the same settings");
    MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, run.comm);
    MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, run.comm);
  }
  if (low != high) throw InputError("config: the ranks do not hold the same settings");
}

// The config as rank 0 read it, the same on every rank; the sweep's cases; the backend `auto`
// means, suited to every point's dtype; what the results file records of the run.
void agree_on_settings(Run& run) {
  run.config = load_config(
      run.args, [&](const std::string& path) { return broadcast_file(run.comm, run.rank, path); });
  watchdog::start(run.rank, run.world, run.config.timeout);
  run.plan_world = run.args.dry_run && run.args.world ? *run.args.world : run.world;
  run.points = sweep_points(run.config);
  for (const Config& point : run.points) run.groups.push_back(make_cases(point, run.plan_world));
  if (run.args.dry_run) return;
  resolve_backends(run.config, run.points);
  const std::string effective = run.config.to_yaml();
  check_same_settings(run, effective);
  run.run_info.git_commit = git_commit();
  run.run_info.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  run.run_info.run_id = new_run_id();
  run.run_info.command_line = run.args.command_line;
  run.run_info.config_yaml = effective;
  if (run.config.output.empty()) {
    run.config.output = "results/fobench-" + utc_now("%Y%m%d-%H%M%S") + ".h5";
  }
}

void print_plans(const Run& run) {
  if (run.rank != 0) return;
  for (const auto& group : run.groups) {
    for (const CaseSpec& spec : group) {
      for (int r = 0; r < run.plan_world; ++r) print_plan(std::cout, make_plan(spec, r));
      std::cout << "\n";
    }
  }
}

// What this rank lacks to hold the plans' buffers (and rank 0, every rank's task times until a
// group's last round), in words; empty when it has enough.
std::string memory_problem(const Run& run) {
  const Config& config = run.config;
  int64_t needed = 0;
  for (const auto& group : run.plans) {
    // Interleaved rounds keep a group's buffers resident; one round holds one case at a time.
    int64_t group_bytes = 0;
    for (const Plan& plan : group) {
      const int64_t bytes = run.backend->bytes_needed(plan);
      group_bytes = config.rounds > 1 ? group_bytes + bytes : std::max(group_bytes, bytes);
    }
    needed = std::max(needed, group_bytes);
  }
  const int64_t available = run.backend->bytes_free();
  if (available >= 0 && needed > available) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "memory: rank %d needs %.2f GiB of %s for these cases but %.2f GiB are "
                  "free; lower batch/seq%s",
                  run.rank, needed / 1073741824.0, run.backend->memory_name().c_str(),
                  available / 1073741824.0,
                  config.rounds > 1 ? ", or pass --rounds 1 to hold one case at a time" : "");
    return text;
  }
  if (run.rank != 0) return "";
  std::vector<std::vector<int64_t>> group_tasks(run.plans.size());
  for (size_t g = 0; g < run.plans.size(); ++g) {
    for (const Plan& plan : run.plans[g]) {
      group_tasks[g].push_back(static_cast<int64_t>(plan.tasks.size()));
    }
  }
  try {
    check_timing_memory(group_tasks, config.iters, run.world, host_available_bytes());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

BackendOptions backend_options(const Config& config, MPI_Comm comm) {
  return BackendOptions{.comm = comm,
                        .link = config.link,
                        .blas_threads = config.blas_threads,
                        .seed = config.seed,
                        .transport = config.transport,
                        .graphs = config.graphs,
                        .comm_sms = config.comm_sms,
                        .timeout_s = config.timeout,
                        .math = config.math};
}

ExecOptions exec_options(const Config& config) {
  return ExecOptions{.iters = config.iters,
                     .warmup = config.warmup,
                     .rounds = config.rounds,
                     .timeout_s = config.timeout,
                     .verify = config.verify,
                     .seed = config.seed,
                     .progress_label = "",
                     .fast_math = config.math == "fast"};
}

// The backend (collective: the NCCL communicator, the emulated link's clocks) and this rank's
// plans, refused as bad input on every rank when any rank lacks the memory for them.
void plan_and_check_memory(Run& run) {
  const BackendOptions options = backend_options(run.config, run.comm);
  {
    const watchdog::Wait wait("setting up the " + run.config.backend + " backend");
    run.backend =
        run.config.backend == "cuda" ? make_cuda_backend(options) : make_cpu_backend(options);
  }
  run.plans.assign(run.groups.size(), {});
  for (size_t g = 0; g < run.groups.size(); ++g) {
    for (const CaseSpec& spec : run.groups[g]) run.plans[g].push_back(make_plan(spec, run.rank));
  }
  const std::string problem = memory_problem(run);
  int bad = problem.empty() ? 0 : 1, any = 0;
  {
    const watchdog::Wait wait("the memory check");
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, run.comm);
  }
  if (bad) throw RankInputError(problem);
  if (any) throw InputError("memory: another rank lacks device memory for these cases");
}

// The link a results file recorded, reused: --link-from, or a resumed --link-ratio run (whose
// journal holds what it chose; choosing anew would find another rate and refuse the resume).
void reuse_link(Run& run, const std::string& path) {
  if (run.config.backend != "cpu") {
    throw InputError("--link-from: the " + run.config.backend +
                     " backend has no emulated link; valid backends: cpu");
  }
  const std::string text =
      broadcast_from_rank0(run.comm, run.rank, "reading the link of '" + path + "'", [&] {
        const LinkChoice c = recorded_link(read_results(path).system, path);
        char gbps[40];
        std::snprintf(gbps, sizeof gbps, "%.17g", c.gbps);
        return std::string(gbps) + "\n" + c.probe;
      });
  const size_t cut = text.find('\n');
  run.config.link.gbps = std::strtod(text.c_str(), nullptr);
  run.config.link_probe = text.substr(cut + 1);
  run.backend.reset();
  run.backend = make_cpu_backend(backend_options(run.config, run.comm));
  if (run.rank == 0) {
    std::fprintf(stderr, "fobench: link_gbps %.9g reused from '%s'\n", run.config.link.gbps,
                 path.c_str());
  }
}

// --link-ratio: the emulated bandwidth is found now, before the file records the link.
void match_link_ratio(Run& run) {
  if (run.args.link_from) {
    if (run.config.link.gbps != 0) {
      throw InputError("--link-from takes the link rate from '" + *run.args.link_from +
                       "'; link_gbps " + std::to_string(run.config.link.gbps) +
                       " asks for another: give one of them");
    }
    return reuse_link(run, *run.args.link_from);
  }
  if (!(run.config.link_ratio > 0)) return;
  if (run.config.backend != "cpu") {
    throw InputError("link_ratio: the " + run.config.backend +
                     " backend has no emulated link; valid backends: cpu");
  }
  if (run.args.resume) return reuse_link(run, *run.args.resume);
  const LinkChoice choice =
      choose_link(run.config.link_ratio, run.groups.front().front(), run.rank,
                  backend_options(run.config, run.comm), exec_options(run.config));
  run.config.link.gbps = choice.gbps;
  run.config.link_probe = choice.probe;
  run.backend.reset();
  run.backend = make_cpu_backend(backend_options(run.config, run.comm));
  if (run.rank == 0) std::fprintf(stderr, "fobench: %s\n", choice.probe.c_str());
}

size_t case_count(const Run& run) {
  size_t total = 0;
  for (const auto& group : run.groups) total += group.size();
  return total;
}

// Rank 0 reopens an interrupted file: checked on a read-only look before it is opened for
// writing, so a refused resume leaves it byte for byte as it was. A case already in it with the
// same id, fields and iteration count is not run again.
void resume_results(Run& run) {
  const RunArgs& args = run.args;
  const std::string target = partial_target(*args.resume);
  const std::optional<std::string> output = given(args, "output");
  if (output && std::filesystem::absolute(*output).lexically_normal() !=
                    std::filesystem::absolute(target).lexically_normal()) {
    throw InputError("-o '" + *output + "' with --resume '" + *args.resume +
                     "': a resumed run finishes its own file, '" + target +
                     "'; give one or the other");
  }
  if (!is_journal_file(*args.resume)) throw InputError(not_a_journal(*args.resume));
  const std::string why = resume_mismatch(read_results(*args.resume), run.run_info, run.system);
  if (!why.empty()) {
    throw InputError("--resume '" + *args.resume + "': " + why +
                     "; resume with the settings it was started with, or start a new file");
  }
  run.writer = std::make_unique<ResultWriter>(*args.resume);
  size_t i = 0;
  for (const auto& group : run.groups) {
    for (const CaseSpec& spec : group) {
      for (const CaseResult& c : run.writer->cases()) {
        if (c.id == case_id(i) && finished(c, spec, run.config.iters, run.config.auto_slices))
          run.skip[i] = 1;
      }
      ++i;
    }
  }
}

// The results file, created or resumed by rank 0, whose verdict every rank shares.
void open_results(Run& run) {
  run.places = RankPlaces{};
  run.system = describe_system(run.comm, run.rank, run.world, *run.backend, run.config, run.places);
  run.skip.assign(case_count(run), 0);
  agree_on_error(run.comm, run.rank, "the results file", [&] {
    if (run.args.resume) return resume_results(run);
    create_output_directory(run.config.output);
    std::vector<std::string> inputs;
    if (!run.args.config_path.empty()) inputs.push_back(run.args.config_path);
    run.writer = std::make_unique<ResultWriter>(run.config.output, run.args.force, run.run_info,
                                                run.system, inputs);
  });
}

// Printed once the results file is settled: a refused run prints nothing but its error.
void print_header(const Run& run) {
  if (run.rank != 0) return;
  stop::set_note(kept_note(*run.writer, 0));
  const SystemInfo& system = run.system;
  std::printf("# fobench %s  backend %s  transport %s  world %d  link %s  timer %s\n", FOB_VERSION,
              system.backend.c_str(), system.transport.c_str(), run.world,
              system.link_emulation.c_str(), system.timer.c_str());
  for (int r = 0; r < run.world; ++r) {
    std::printf("#  Rank %2d Pid %7s on %10s device %s\n", r, run.places.pids[r].c_str(),
                run.places.hosts[r].c_str(), run.places.devices[r].c_str());
  }
  std::fflush(stdout);
}

// Rank 0 writes each case after each of its shares, so a stopped run keeps what it measured,
// and says how far the sweep is.
class Flusher {
 public:
  Flusher(Run& run, size_t slots_total)
      : run_(run), slots_total_(slots_total), start_(std::chrono::steady_clock::now()) {}

  void operator()(const CaseResult& r, int round, int rounds_total) {
    ++slots_done_;
    if (run_.rank != 0) return;
    watchdog::test_stop_point("writing case " + r.id);
    {
      // A stop signal is held until the note counts the case just written.
      const stop::WriteSection section;
      run_.writer->add_case(r);
      if (round + 1 < rounds_total) {
        partly_.insert(r.id);
      } else {
        partly_.erase(r.id);
      }
      stop::set_note(kept_note(*run_.writer, partly_.size()));
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double left = elapsed / slots_done_ * (slots_total_ - slots_done_);
    std::fprintf(stderr,
                 "[fobench] %5.0f s  case %s/%04zu %-14s round %d/%d  median %9.3f ms over %d"
                 "  ~%.0f s left%s\n",
                 elapsed, r.id.c_str(), run_.skip.size() - 1, r.strategy.c_str(), round + 1,
                 rounds_total, median_step(r) * 1e3, r.iters, left,
                 r.verified == 0 ? "  VERIFICATION FAILED" : "");
  }

 private:
  Run& run_;
  size_t slots_total_, slots_done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::set<std::string> partly_;  // ids of cases with rounds still to come
};

// One group's cases not yet in the file, interleaved round by round; --auto-slices first picks
// each case's count. Returns whether every case verified.
bool run_group(Run& run, size_t g, size_t first_index, Executor& executor, ExecOptions& exec,
               Flusher& flush) {
  std::vector<const Plan*> plan_ptrs;
  std::vector<std::string> ids;
  std::map<std::string, std::string> tuned;  // case id -> what --auto-slices measured
  for (size_t c = 0, index = first_index; c < run.groups[g].size(); ++c, ++index) {
    if (run.skip[index]) continue;
    if (run.config.auto_slices) {
      const std::string record = tune_slices(executor, run.groups[g][c], exec, run.rank);
      if (!record.empty()) {
        run.plans[g][c] = make_plan(run.groups[g][c], run.rank);
        tuned[case_id(index)] = record;
        if (run.rank == 0) {
          std::fprintf(stderr, "[fobench] --auto-slices case %s: %s\n", case_id(index).c_str(),
                       record.c_str());
        }
      }
    }
    ids.push_back(case_id(index));
    plan_ptrs.push_back(&run.plans[g][c]);
  }
  if (plan_ptrs.empty()) return true;
  exec.progress_label = "[" + std::string(to_string(run.groups[g].front().workload)) + "]";
  auto flush_tuned = [&](const CaseResult& r, int round, int rounds_total) {
    auto it = tuned.find(r.id);
    if (it == tuned.end()) return flush(r, round, rounds_total);
    CaseResult noted = r;
    noted.auto_slices = it->second;
    flush(noted, round, rounds_total);
  };
  bool verified = true;
  for (const CaseResult& r : executor.run_cases(plan_ptrs, ids, exec, flush_tuned)) {
    if (r.verified == 0) verified = false;
  }
  return verified;
}

// Every case not yet in the file, group after group; then the finished file and its table.
// Returns whether every case verified.
bool measure(Run& run) {
  {
    const watchdog::Wait wait("the broadcast of the cases a resumed file holds");
    MPI_Bcast(run.skip.data(), static_cast<int>(run.skip.size()), MPI_INT, 0, run.comm);
  }
  ExecOptions exec = exec_options(run.config);
  Executor executor(*run.backend, run.comm);
  const size_t to_run = static_cast<size_t>(std::count(run.skip.begin(), run.skip.end(), 0));
  Flusher flush(run, to_run * std::clamp(run.config.rounds, 1, run.config.iters));
  bool all_verified = true;
  for (size_t g = 0, index = 0; g < run.groups.size(); index += run.groups[g].size(), ++g) {
    if (!run_group(run, g, index, executor, exec, flush)) all_verified = false;
  }
  ResultFile finished;
  if (run.rank == 0) finished = run.writer->finish();
  wait_for_the_finished_file(run.comm, run.plans, run.world, run.config.iters);
  if (run.rank == 0) {
    std::cout << "\n";
    write_report(std::cout, finished, parse_table_format("md"));
    std::cout << "\nresults: " << run.writer->final_path() << "\n";
    const std::string noise = noise_warning(summarize(finished));
    if (!noise.empty()) std::fprintf(stderr, "%s\n", noise.c_str());
  }
  return all_verified;
}

}  // namespace

int run_command(const RunArgs& args) {
  Run run(args);
  const bool threads_ok = start_mpi(run);
  constexpr Stage before = Stage::before_measuring;
  if (auto code = run_phase(run, before, [&] {
        if (!threads_ok)
          throw RuntimeFault("the MPI library does not provide MPI_THREAD_SERIALIZED");
        agree_on_settings(run);
      })) {
    return *code;
  }
  if (args.dry_run) {
    print_plans(run);
    return finalize(kExitOk);
  }
  if (auto code = run_phase(run, before, [&] { plan_and_check_memory(run); })) return *code;
  if (auto code = run_phase(run, before, [&] { match_link_ratio(run); })) return *code;
  if (auto code = run_phase(run, before, [&] { open_results(run); })) return *code;
  print_header(run);
  bool all_verified = true;
  run_phase(run, Stage::measuring, [&] { all_verified = measure(run); });
  run.backend.reset();
  return finalize(all_verified ? kExitOk : kExitVerifyFailed);
}

}  // namespace fob
