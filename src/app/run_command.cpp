// `fobench run`: validate everything, then run every case and write results case by case.
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "backends/cpu/blas_runtime.h"
#include "cases.h"
#include "commands.h"
#include "core/gather.h"
#include "fob/backend.h"
#include "fob/executor.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/results.h"
#include "fob/text_file.h"
#include "fob/workload.h"

extern char** environ;

namespace fob {
namespace {

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, strnlen(text, static_cast<size_t>(len)));
  auto nl = s.find_first_of("\r\n");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string recorded_env() {
  std::string out;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    for (const char* prefix :
         {"NCCL_", "CUDA_DEVICE_MAX_CONNECTIONS", "OMP_", "OPENBLAS_", "OMPI_MCA_", "FOB_"}) {
      if (kv.rfind(prefix, 0) == 0) {
        out += kv + "\n";
        break;
      }
    }
  }
  return out;
}

// Rank 0 reads the file; every rank gets its text, or every rank gets the same error.
std::string broadcast_file(MPI_Comm comm, int rank, const std::string& path) {
  std::string text, error;
  if (rank == 0) {
    try {
      text = read_regular_file(path, "config");
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  for (std::string* s : {&text, &error}) {
    int len = static_cast<int>(s->size());
    MPI_Bcast(&len, 1, MPI_INT, 0, comm);
    s->resize(len);
    MPI_Bcast(s->data(), len, MPI_CHAR, 0, comm);
  }
  if (!error.empty()) throw InputError(error);
  return text;
}

// Raises on every rank the InputError that rank 0 alone may have met.
void agree_on_error(MPI_Comm comm, int rank, const std::function<void()>& rank0_step) {
  std::string error;
  if (rank == 0) {
    try {
      rank0_step();
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  int len = static_cast<int>(error.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  error.resize(len);
  MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm);
  if (!error.empty()) throw InputError(error);
}

// Settles `auto` and checks that backend, transport, dtype and options fit together.
void resolve_backend(Config& c) {
  if (c.backend == "auto") {
    c.backend = cuda_backend_built() && cuda_device_count() > 0 ? "cuda" : "cpu";
  }
  if (c.backend == "cuda") {
    const CudaStatus status = cuda_status();
    if (!status.loaded) make_cuda_backend({});  // throws the message that says why
    if (status.devices == 0) {
      throw InputError("backend: 'cuda' but no CUDA device is visible to this rank" +
                       (status.error.empty() ? std::string() : " (" + status.error + ")") +
                       "; valid here: auto, cpu");
    }
  }
  const bool cuda = c.backend == "cuda";
  if (c.transport == "auto") c.transport = cuda ? "nccl" : "mpi";
  if (!cuda && c.transport == "nccl") {
    throw InputError("transport: 'nccl' needs the cuda backend; valid for cpu: auto, mpi");
  }
  if (!cuda && c.dtype != DType::fp32 && c.dtype != DType::fp64) {
    throw InputError(std::string("dtype: '") + to_string(c.dtype) +
                     "' is not supported by the cpu backend; valid: fp32, fp64");
  }
  if (c.graphs && !(cuda && c.transport == "nccl")) {
    throw InputError(
        "graphs: CUDA graphs need --backend cuda --transport nccl (host-staged "
        "transfers cannot be captured)");
  }
  if (c.comm_sms > 0 && !cuda) {
    throw InputError("comm_sms: " + std::to_string(c.comm_sms) +
                     " is a cuda backend option; the cpu backend has no SMs to leave free");
  }
  if (c.link.enabled() && cuda && c.transport == "nccl") {
    throw InputError(
        "link_gbps/link_latency_us: link emulation needs host-staged transfers "
        "(--transport mpi); NCCL's transfers cannot be held back");
  }
}

std::string case_id(size_t index) {
  char id[32];
  std::snprintf(id, sizeof id, "%04zu", index);
  return id;
}

// Whether a case already in a results file is this spec, measured to the end.
bool finished(const CaseResult& c, const CaseSpec& spec, int iters) {
  return c.workload == to_string(spec.workload) && c.strategy == spec.strategy.text &&
         c.batch == spec.shape.batch && c.seq == spec.shape.seq && c.hidden == spec.shape.hidden &&
         c.ffn == spec.shape.ffn &&
         // Files from before attention hold no head count; only attention depends on it.
         (c.heads == spec.shape.head_count() ||
          (c.heads == 0 && spec.workload != Workload::attn)) &&
         c.dtype == to_string(spec.dtype) && c.world == spec.world && c.iters == iters;
}

// --auto-slices: for a slicing, flash or flash_qs case, time each count that divides the rows per
// rank for a few iterations and return the fastest spec, with what was measured. Collective.
std::string tune_slices(Executor& executor, CaseSpec& spec, const ExecOptions& base, int rank) {
  const std::string name = spec.strategy.strategy->name;
  if (name != "slicing" && name != "flash" && name != "flash_qs") return "";
  const int64_t block = geometry(spec.workload, spec.shape).m / spec.world;
  std::vector<int> counts =
      name == "slicing" ? std::vector<int>{1, 2, 4, 8, 16} : std::vector<int>{1, 2, 4, 8};
  ExecOptions quick = base;
  quick.iters = 3;
  quick.warmup = 1;
  quick.rounds = 1;
  quick.verify = false;  // the chosen count is verified when it runs as the case
  quick.progress_label.clear();
  std::string record;
  double best = 0;
  int best_count = spec.strategy.param;
  for (int count : counts) {
    if (count > block) continue;
    CaseSpec trial = spec;
    trial.strategy = parse_strategy(name + ":" + std::to_string(count));
    Plan plan = make_plan(trial, rank);
    CaseResult r = executor.run_case(plan, quick, "tune");
    double median = 0;
    if (rank == 0) {
      std::vector<double> steps;
      for (int it = 0; it < r.iters; ++it) steps.push_back(r.step(it));
      std::sort(steps.begin(), steps.end());
      median = steps[steps.size() / 2];
    }
    MPI_Bcast(&median, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    char text[64];
    std::snprintf(text, sizeof text, "%s%s:%d %.3f ms", record.empty() ? "" : ", ", name.c_str(),
                  count, median * 1e3);
    record += text;
    if (best == 0 || median < best) {
      best = median;
      best_count = count;
    }
  }
  spec.strategy = parse_strategy(name + ":" + std::to_string(best_count));
  return record + "; chose " + spec.strategy.text;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  return h;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

int finalize(int code) {
  MPI_Finalize();
  return code;
}

}  // namespace

namespace {

// The cuda backend as this machine finds it: its versions and devices, or why it cannot run.
std::string cuda_version_line() {
  if (!cuda_backend_built()) {
    return "not built (configure with -DFOB_CUDA=AUTO|ON where the CUDA toolkit, cuBLAS and "
           "NCCL are found)";
  }
  const CudaStatus status = cuda_status();
  if (!status.loaded) return status.error.substr(status.error.find(": ") + 2);
  std::string line = cuda_versions() + ", " + std::to_string(status.devices) + " device(s) visible";
  if (!status.error.empty()) line += " (" + status.error + ")";
  return line;
}

}  // namespace

namespace {

// The file an interrupted NAME.h5.partial becomes when its run finishes.
std::string partial_target(const std::string& partial) {
  const std::string suffix = ".partial";
  if (partial.size() <= suffix.size() ||
      partial.compare(partial.size() - suffix.size(), suffix.size(), suffix) != 0) {
    throw InputError("--resume: '" + partial + "' is not a .h5.partial file");
  }
  return partial.substr(0, partial.size() - suffix.size());
}

}  // namespace

std::string version_text() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  std::ostringstream out;
  out << "fobench " << FOB_VERSION << " (git " << FOB_GIT_COMMIT << ")\n"
      << "backends: cpu" << (cuda_backend_built() ? ", cuda" : "") << "\n"
      << "cuda: " << cuda_version_line() << "\n"
      << "MPI: " << mpi_library_version() << "\n"
      << "HDF5: " << major << "." << minor << "." << release << "\n"
      << "BLAS: " << blas_description() << "\n";
  return out.str();
}

int run_command(const RunArgs& args) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

  Config config;
  // One group per point of the sweep; a group's cases run interleaved, groups one after another.
  std::vector<std::vector<CaseSpec>> groups;
  std::unique_ptr<ResultWriter> writer;
  RunInfo run_info;
  try {
    if (provided < MPI_THREAD_SERIALIZED) {
      throw RuntimeFault("the MPI library does not provide MPI_THREAD_SERIALIZED");
    }
    if (!args.config_path.empty()) {
      apply_yaml(config, broadcast_file(comm, rank, args.config_path), args.config_path);
    }
    apply_args(config, args);
    validate_config(config);
    const int plan_world = args.dry_run && args.world ? *args.world : world;
    std::vector<Config> points = expand_sweep(config);
    check_strategies_apply(points);
    for (const Config& point : points) {
      validate_config(point);
      groups.push_back(make_cases(point, plan_world));
    }

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
    MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, comm);
    if (low != high) throw InputError("config: the ranks do not hold the same settings");

    run_info.git_commit = FOB_GIT_COMMIT;
    run_info.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
    run_info.command_line = args.command_line;
    run_info.config_yaml = effective;
    if (config.output.empty())
      config.output = "results/fobench-" + utc_now("%Y%m%d-%H%M%S") + ".h5";
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "fobench: error: %s\n", e.what());
    return finalize(kExitBadInput);
  } catch (const RuntimeFault& e) {
    std::fprintf(stderr, "fobench: rank %d: %s\n", rank, e.what());
    MPI_Abort(comm, kExitRuntimeFault);
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
    backend = config.backend == "cuda" ? make_cuda_backend(options) : make_cpu_backend(options);
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
                    "memory: rank %d needs %.2f GiB of device memory for these cases but %.2f GiB "
                    "are free; lower batch/seq%s",
                    rank, needed / 1073741824.0, available / 1073741824.0,
                    config.rounds > 1 ? ", or pass --rounds 1 to hold one case at a time" : "");
      problem = text;
    }
    int bad = problem.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
    if (bad) throw InputError(problem);
    if (any) throw InputError("memory: another rank lacks device memory for these cases");
  } catch (const InputError& e) {
    if (rank == 0 || std::string(e.what()).rfind("memory: rank", 0) == 0) {
      std::fprintf(stderr, "fobench: error: %s\n", e.what());
    }
    backend.reset();
    return finalize(kExitBadInput);
  } catch (const RuntimeFault& e) {
    std::fprintf(stderr, "fobench: %s\n", e.what());
    MPI_Abort(comm, kExitRuntimeFault);
  }

  SystemInfo system;
  system.backend = backend->name();
  system.transport = backend->transport();
  system.world_size = world;
  system.mpi_version = mpi_library_version();
  system.nccl_version = "n/a";
  system.cuda_version = "n/a";
  if (backend->name() == "cuda") {
    system.cuda_version = cuda_versions();
    system.nccl_version = system.transport == "nccl" ? cuda_versions() : "n/a (transport mpi)";
  }
  system.blas = backend->blas();
  system.link_emulation = config.link.describe();
  system.timer = backend->timer();
  system.env = recorded_env();
  auto hosts = gather_strings(comm, hostname());
  auto devices = gather_strings(comm, backend->device());
  auto pids = gather_strings(comm, std::to_string(getpid()));
  if (rank == 0) {
    // More ranks than cores on a host: the ranks time-share the cores, one compute task per
    // core at a time (the CPU backend's core slots), which a reader must know.
    std::map<std::string, int> per_host;
    for (const std::string& h : hosts) ++per_host[h];
    const unsigned cores = std::thread::hardware_concurrency();
    for (const auto& [host, ranks] : per_host) {
      const unsigned threads = config.backend == "cpu" ? 1u * config.blas_threads : 0u;
      if (threads > 0 && cores > 0 && ranks * threads > cores) {
        system.notes = std::to_string(ranks) + " ranks shared " + std::to_string(cores) +
                       " cores on " + host +
                       ": compute tasks took turns on the cores, so every time is that of " +
                       std::to_string(cores) + " cores serving " + std::to_string(ranks) +
                       " ranks and run-to-run noise is larger; compare strategies with each other";
      }
    }
    system.hostnames = join(hosts, ",");
    system.devices = join(devices, ",");
    std::printf("# fobench %s  backend %s  transport %s  world %d  link %s  timer %s\n",
                FOB_VERSION, system.backend.c_str(), system.transport.c_str(), world,
                system.link_emulation.c_str(), system.timer.c_str());
    for (int r = 0; r < world; ++r) {
      std::printf("#  Rank %2d Pid %7s on %10s device %s\n", r, pids[r].c_str(), hosts[r].c_str(),
                  devices[r].c_str());
    }
    std::fflush(stdout);
  }

  // Case ids number the cases across the whole sweep; with --resume, a case already in the
  // file with the same id, fields and iteration count is not run again.
  size_t total = 0;
  for (const auto& group : groups) total += group.size();
  std::vector<int> skip(total, 0);
  try {
    agree_on_error(comm, rank, [&] {
      if (args.resume) {
        // Checked on a read-only look before the file is opened for writing, so a refused
        // resume leaves it byte for byte as it was.
        const std::string target = partial_target(*args.resume);
        if (args.output && std::filesystem::absolute(*args.output).lexically_normal() !=
                               std::filesystem::absolute(target).lexically_normal()) {
          throw InputError("-o '" + *args.output + "' with --resume '" + *args.resume +
                           "': a resumed run finishes its own file, '" + target +
                           "'; give one or the other");
        }
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
      std::filesystem::path out(config.output);
      if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
      writer = std::make_unique<ResultWriter>(config.output, args.force, run_info, system);
    });
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "fobench: error: %s\n", e.what());
    return finalize(kExitBadInput);
  }
  MPI_Bcast(skip.data(), static_cast<int>(total), MPI_INT, 0, comm);

  ExecOptions exec;
  exec.iters = config.iters;
  exec.warmup = config.warmup;
  exec.timeout_s = config.timeout;
  exec.verify = config.verify;
  exec.seed = config.seed;
  exec.rounds = config.rounds;
  Executor executor(*backend, comm);
  bool all_verified = true;
  std::vector<CaseResult> done;
  try {
    const auto start = std::chrono::steady_clock::now();
    const int rounds = std::clamp(config.rounds, 1, config.iters);
    size_t to_run = 0;
    for (int s : skip) to_run += s ? 0 : 1;
    const size_t slots_total = to_run * rounds;
    size_t slots_done = 0;
    // Rank 0 writes each case after each of its shares, so a stopped run keeps what it measured.
    auto flush = [&](const CaseResult& r, int round, int rounds_total) {
      ++slots_done;
      if (rank != 0) return;
      writer->add_case(r);
      std::vector<double> steps;
      for (int it = 0; it < r.iters; ++it) steps.push_back(r.step(it));
      std::sort(steps.begin(), steps.end());
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double left = elapsed / slots_done * (slots_total - slots_done);
      std::fprintf(stderr,
                   "[fobench] %5.0f s  case %s/%04zu %-14s round %d/%d  median %9.3f ms over %d"
                   "  ~%.0f s left%s\n",
                   elapsed, r.id.c_str(), total - 1, r.strategy.c_str(), round + 1, rounds_total,
                   steps[steps.size() / 2] * 1e3, r.iters, left,
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
    if (rank == 0) done = writer->cases();
    if (rank == 0) {
      writer->finish();
      std::sort(done.begin(), done.end(),
                [](const CaseResult& a, const CaseResult& b) { return a.id < b.id; });
      ResultFile file{run_info, system, done};
      std::cout << "\n";
      write_report(std::cout, file, ReportFormat::md);
      std::cout << "\nresults: " << writer->final_path() << "\n";
    }
  } catch (const RuntimeFault& e) {
    // A fault mid-sweep: the cases already flushed stay in the .partial file.
    std::fprintf(stderr, "fobench: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(comm, kExitRuntimeFault);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fobench: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(comm, kExitRuntimeFault);
  }
  backend.reset();
  return finalize(all_verified ? kExitOk : kExitVerifyFailed);
}

}  // namespace fob
