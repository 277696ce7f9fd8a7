// `fobench run`: validate everything, then run every case and write results case by case.
#include <limits.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "backends/cpu/host_memory.h"
#include "cases.h"
#include "commands.h"
#include "core/stop_signals.h"
#include "core/watchdog.h"
#include "fob/backend.h"
#include "fob/executor.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/results.h"
#include "fob/text_file.h"
#include "fob/version.h"
#include "fob/workload.h"
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
  // A message that already says what was kept (a failed write) is not told twice.
  const std::string kept = what.find("kept") == std::string::npos ? stop::note() : "";
  if (!kept.empty()) what += "; " + kept;
  std::fprintf(stderr, "fobench: %s\n", what.c_str());
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
    return load_config(args,
                       [](const std::string& path) { return read_regular_file(path, "config"); })
        .timeout;
  } catch (const std::exception&) {
    return Config().timeout;  // rank 0 reports the problem once the ranks can agree on it
  }
}

}  // namespace

int run_command(const RunArgs& args) {
  // MPI_Init waits for every rank too: the watchdog starts before it, with the rank the
  // launcher gives and the timeout the command line and config file give, as far as this
  // rank can tell before the ranks talk.
  const LaunchRank launched = launch_rank();
  stop::install(launched.rank);
  watchdog::start(launched.rank, launched.world, early_timeout(args));
  int provided = 0;
  {
    const watchdog::Wait wait("MPI_Init");
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  }
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  stop::install(rank);
  watchdog::start(rank, world, early_timeout(args));
  if (rank == 0) stop::set_note("nothing was measured yet");

  Config config;
  // One group per point of the sweep; a group's cases run interleaved, groups one after another.
  std::vector<std::vector<CaseSpec>> groups;
  std::unique_ptr<ResultWriter> writer;
  RunInfo run_info;
  try {
    if (provided < MPI_THREAD_SERIALIZED) {
      throw RuntimeFault("the MPI library does not provide MPI_THREAD_SERIALIZED");
    }
    config = load_config(args,
                         [&](const std::string& path) { return broadcast_file(comm, rank, path); });
    watchdog::start(rank, world, config.timeout);
    const int plan_world = args.dry_run && args.world ? *args.world : world;
    std::vector<Config> points = sweep_points(config);
    for (const Config& point : points) groups.push_back(make_cases(point, plan_world));

    if (args.dry_run) {
      if (rank == 0) {
        for (const auto& group : groups) {
          for (const CaseSpec& spec : group) {
            for (int r = 0; r < plan_world; ++r) print_plan(std::cout, make_plan(spec, r));
            std::cout << "\n";
          }
        }
      }
      return finalize(kExitOk);
    }
    resolve_backend(config);
    for (Config point : points) {
      point.backend = config.backend;
      point.transport = config.transport;
      resolve_backend(point);  // each point's dtype must suit the backend
    }

    // Every rank must run the same cases; a mismatch would deadlock the first collective.
    const std::string effective = config.to_yaml();
    uint64_t hash = fnv1a(effective), low = hash, high = hash;
    {
      const watchdog::Wait wait("the check that every rank holds the same settings");
      MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, comm);
      MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, comm);
    }
    if (low != high) throw InputError("config: the ranks do not hold the same settings");

    run_info.git_commit = git_commit();
    run_info.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
    run_info.command_line = args.command_line;
    run_info.config_yaml = effective;
    if (config.output.empty())
      config.output = "results/fobench-" + utc_now("%Y%m%d-%H%M%S") + ".h5";
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "fobench: error: %s\n", e.what());
    return finalize(kExitBadInput);
  } catch (const std::exception& e) {
    fault(comm, rank, e);
  }

  BackendOptions options;
  options.comm = comm;
  options.link = config.link;
  options.blas_threads = config.blas_threads;
  options.seed = config.seed;
  options.transport = config.transport;
  options.graphs = config.graphs;
  options.comm_sms = config.comm_sms;
  options.timeout_s = config.timeout;
  std::unique_ptr<Backend> backend;
  std::vector<std::vector<Plan>> plans(groups.size());
  try {
    {
      // Making a backend is collective (the NCCL communicator, the emulated link's clocks).
      const watchdog::Wait wait("setting up the " + config.backend + " backend");
      backend = config.backend == "cuda" ? make_cuda_backend(options) : make_cpu_backend(options);
    }
    // Interleaved rounds keep a group's buffers resident; one round holds one case at a time.
    int64_t needed = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      int64_t group_bytes = 0;
      for (const CaseSpec& spec : groups[g]) {
        plans[g].push_back(make_plan(spec, rank));
        const int64_t bytes = backend->bytes_needed(plans[g].back());
        group_bytes = config.rounds > 1 ? group_bytes + bytes : std::max(group_bytes, bytes);
      }
      needed = std::max(needed, group_bytes);
    }
    const int64_t available = backend->bytes_free();
    std::string problem;
    if (available >= 0 && needed > available) {
      char text[256];
      std::snprintf(text, sizeof text,
                    "memory: rank %d needs %.2f GiB of %s for these cases but %.2f GiB are "
                    "free; lower batch/seq%s",
                    rank, needed / 1073741824.0, backend->memory_name().c_str(),
                    available / 1073741824.0,
                    config.rounds > 1 ? ", or pass --rounds 1 to hold one case at a time" : "");
      problem = text;
    }
    if (rank == 0 && problem.empty()) {
      // Rank 0 also holds every rank's task times of a group's cases until their last round.
      std::vector<std::vector<int64_t>> group_tasks(plans.size());
      for (size_t g = 0; g < plans.size(); ++g) {
        for (const Plan& plan : plans[g]) {
          group_tasks[g].push_back(static_cast<int64_t>(plan.tasks.size()));
        }
      }
      try {
        check_timing_memory(group_tasks, config.iters, world, host_available_bytes());
      } catch (const InputError& e) {
        problem = e.what();
      }
    }
    int bad = problem.empty() ? 0 : 1, any = 0;
    {
      const watchdog::Wait wait("the memory check");
      MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
    }
    if (bad) throw InputError(problem);
    if (any) throw InputError("memory: another rank lacks device memory for these cases");
  } catch (const InputError& e) {
    if (rank == 0 || std::string(e.what()).rfind("memory: rank", 0) == 0) {
      std::fprintf(stderr, "fobench: error: %s\n", e.what());
    }
    backend.reset();
    return finalize(kExitBadInput);
  } catch (const std::exception& e) {
    fault(comm, rank, e);
  }

  RankPlaces places;
  const SystemInfo system = describe_system(comm, rank, world, *backend, config, places);

  // Case ids number the cases across the whole sweep; with --resume, a case already in the
  // file with the same id, fields and iteration count is not run again.
  size_t total = 0;
  for (const auto& group : groups) total += group.size();
  std::vector<int> skip(total, 0);
  try {
    agree_on_error(comm, rank, "the results file", [&] {
      if (args.resume) {
        // Checked on a read-only look before the file is opened for writing, so a refused
        // resume leaves it byte for byte as it was.
        const std::string target = partial_target(*args.resume);
        const std::optional<std::string> output = given(args, "output");
        if (output && std::filesystem::absolute(*output).lexically_normal() !=
                          std::filesystem::absolute(target).lexically_normal()) {
          throw InputError("-o '" + *output + "' with --resume '" + *args.resume +
                           "': a resumed run finishes its own file, '" + target +
                           "'; give one or the other");
        }
        if (!is_journal_file(*args.resume)) throw InputError(not_a_journal(*args.resume));
        const std::string why = resume_mismatch(read_results(*args.resume), run_info, system);
        if (!why.empty()) {
          throw InputError("--resume '" + *args.resume + "': " + why +
                           "; resume with the settings it was started with, or start a new file");
        }
        writer = std::make_unique<ResultWriter>(*args.resume);
        size_t i = 0;
        for (const auto& group : groups) {
          for (const CaseSpec& spec : group) {
            for (const CaseResult& c : writer->cases()) {
              if (c.id == case_id(i) && finished(c, spec, config.iters)) skip[i] = 1;
            }
            ++i;
          }
        }
        return;
      }
      create_output_directory(config.output);
      std::vector<std::string> inputs;
      if (!args.config_path.empty()) inputs.push_back(args.config_path);
      writer = std::make_unique<ResultWriter>(config.output, args.force, run_info, system, inputs);
    });
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "fobench: error: %s\n", e.what());
    return finalize(kExitBadInput);
  }
  if (rank == 0) {
    // Printed once the results file is settled: a refused run prints nothing but its error.
    stop::set_note(kept_note(*writer, 0));
    std::printf("# fobench %s  backend %s  transport %s  world %d  link %s  timer %s\n",
                FOB_VERSION, system.backend.c_str(), system.transport.c_str(), world,
                system.link_emulation.c_str(), system.timer.c_str());
    for (int r = 0; r < world; ++r) {
      std::printf("#  Rank %2d Pid %7s on %10s device %s\n", r, places.pids[r].c_str(),
                  places.hosts[r].c_str(), places.devices[r].c_str());
    }
    std::fflush(stdout);
  }
  {
    const watchdog::Wait wait("the broadcast of the cases a resumed file holds");
    MPI_Bcast(skip.data(), static_cast<int>(total), MPI_INT, 0, comm);
  }

  ExecOptions exec;
  exec.iters = config.iters;
  exec.warmup = config.warmup;
  exec.timeout_s = config.timeout;
  exec.verify = config.verify;
  exec.seed = config.seed;
  exec.rounds = config.rounds;
  Executor executor(*backend, comm);
  bool all_verified = true;
  try {
    const auto start = std::chrono::steady_clock::now();
    const int rounds = std::clamp(config.rounds, 1, config.iters);
    size_t to_run = 0;
    for (int s : skip) to_run += s ? 0 : 1;
    const size_t slots_total = to_run * rounds;
    size_t slots_done = 0;
    std::set<std::string> partly;  // ids of cases with rounds still to come
    // Rank 0 writes each case after each of its shares, so a stopped run keeps what it measured.
    auto flush = [&](const CaseResult& r, int round, int rounds_total) {
      ++slots_done;
      if (rank != 0) return;
      watchdog::test_stop_point("writing case " + r.id);
      writer->add_case(r);
      if (round + 1 < rounds_total) {
        partly.insert(r.id);
      } else {
        partly.erase(r.id);
      }
      stop::set_note(kept_note(*writer, partly.size()));
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double left = elapsed / slots_done * (slots_total - slots_done);
      std::fprintf(stderr,
                   "[fobench] %5.0f s  case %s/%04zu %-14s round %d/%d  median %9.3f ms over %d"
                   "  ~%.0f s left%s\n",
                   elapsed, r.id.c_str(), total - 1, r.strategy.c_str(), round + 1, rounds_total,
                   median_step(r) * 1e3, r.iters, left,
                   r.verified == 0 ? "  VERIFICATION FAILED" : "");
    };
    size_t index = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      std::vector<const Plan*> plan_ptrs;
      std::vector<std::string> ids;
      std::map<std::string, std::string> tuned;  // case id -> what --auto-slices measured
      for (size_t c = 0; c < groups[g].size(); ++c, ++index) {
        if (skip[index]) continue;
        if (config.auto_slices) {
          const std::string record = tune_slices(executor, groups[g][c], exec, rank);
          if (!record.empty()) {
            plans[g][c] = make_plan(groups[g][c], rank);
            tuned[case_id(index)] = record;
            if (rank == 0) {
              std::fprintf(stderr, "[fobench] --auto-slices case %s: %s\n", case_id(index).c_str(),
                           record.c_str());
            }
          }
        }
        ids.push_back(case_id(index));
        plan_ptrs.push_back(&plans[g][c]);
      }
      if (plan_ptrs.empty()) continue;
      exec.progress_label = "[" + std::string(to_string(groups[g].front().workload)) + "]";
      auto flush_tuned = [&](const CaseResult& r, int round, int rounds_total) {
        auto it = tuned.find(r.id);
        if (it == tuned.end()) return flush(r, round, rounds_total);
        CaseResult noted = r;
        noted.auto_slices = it->second;
        flush(noted, round, rounds_total);
      };
      for (const CaseResult& r : executor.run_cases(plan_ptrs, ids, exec, flush_tuned)) {
        if (r.verified == 0) all_verified = false;
      }
    }
    ResultFile finished;
    if (rank == 0) finished = writer->finish();
    wait_for_the_finished_file(comm, plans, world, config.iters);
    if (rank == 0) {
      std::cout << "\n";
      write_report(std::cout, finished, ReportFormat::md);
      std::cout << "\nresults: " << writer->final_path() << "\n";
    }
  } catch (const std::exception& e) {
    // A fault mid-sweep: the cases already flushed stay in the .partial file.
    fault(comm, rank, e);
  }
  backend.reset();
  return finalize(all_verified ? kExitOk : kExitVerifyFailed);
}

}  // namespace fob
