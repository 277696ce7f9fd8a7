// `fobench run`'s parts that are not the run itself: what it records about the machine, how the
// ranks agree on input, which backend `auto` means, and --auto-slices.
#include "run_support.h"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "backends/cpu/blas_runtime.h"
#include "commands.h"
#include "core/watchdog.h"
#include "fob/backend.h"
#include "fob/metrics.h"
#include "fob/text_file.h"
#include "fob/version.h"
#include "fob/workload.h"
extern char** environ;

namespace fob {

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
         {"NCCL_", "CUDA_DEVICE_MAX_CONNECTIONS", "OMP_", "OPENBLAS_", "OMPI_MCA_", "FOB_",
          // Under Slurm: which job measured the file, on which nodes, launched how.
          "SLURM_JOB_ID=", "SLURM_JOB_NODELIST=", "SLURM_CLUSTER_NAME=", "SLURM_MPI_TYPE="}) {
      if (kv.rfind(prefix, 0) == 0) {
        out += kv + "\n";
        break;
      }
    }
  }
  return out;
}

std::string read_config_file(const std::string& path) {
  return read_regular_file(path, "config", kMaxConfigBytes);
}

// Rank 0 reads the file; every rank gets its text, or every rank gets the same error.
std::string broadcast_file(MPI_Comm comm, int rank, const std::string& path) {
  return broadcast_from_rank0(comm, rank, "the broadcast of the config file from rank 0",
                              [&] { return read_config_file(path); });
}

std::string broadcast_from_rank0(MPI_Comm comm, int rank, const std::string& what,
                                 const std::function<std::string()>& produce) {
  const watchdog::Wait wait(what);
  std::string text, error;
  if (rank == 0) {
    try {
      text = produce();
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
void agree_on_error(MPI_Comm comm, int rank, const std::string& what,
                    const std::function<void()>& rank0_step) {
  std::string error;
  if (rank == 0) {
    try {
      rank0_step();
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  const watchdog::Wait wait("the broadcast of rank 0's verdict on " + what);
  int len = static_cast<int>(error.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  error.resize(len);
  MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm);
  if (!error.empty()) throw InputError(error);
}

namespace {

// `auto` settled: cuda where it is built and a device is visible, else cpu; a cuda backend
// asked for must load and see a device.
void settle_backend(Config& c) {
  if (c.backend == "auto") {
    c.backend = cuda_backend_built() && cuda_device_count() > 0 ? "cuda" : "cpu";
  }
  if (c.backend != "cuda") return;
  const CudaStatus status = cuda_status();
  if (!status.loaded) make_cuda_backend({});  // throws the message that says why
  if (status.devices == 0) {
    throw InputError("backend: 'cuda' but no CUDA device is visible to this rank" +
                     (status.error.empty() ? std::string() : " (" + status.error + ")") +
                     "; valid here: auto, cpu");
  }
}

// What the cpu backend cannot run: more BLAS threads than the BLAS runs (they would be recorded
// as if they had run), NCCL, half precision, and the cuda-only options.
void check_cpu_options(const Config& c) {
  const int applied = blas_threads_applied(c.blas_threads);
  if (applied != c.blas_threads) {
    throw InputError("blas_threads: " + std::to_string(c.blas_threads) + " but this BLAS runs " +
                     std::to_string(applied) + " thread(s) at most (" + blas_description() +
                     "); valid: 1 to " + std::to_string(applied));
  }
  if (c.transport == "nccl" || c.transport == "ce") {
    throw InputError("transport: '" + c.transport +
                     "' needs the cuda backend; valid for cpu: auto, mpi");
  }
  if (c.dtype != DType::fp32 && c.dtype != DType::fp64) {
    throw InputError(std::string("dtype: '") + to_string(c.dtype) +
                     "' is not supported by the cpu backend; valid: fp32, fp64");
  }
  if (c.graphs) {
    throw InputError(
        "graphs: CUDA graphs need --backend cuda --transport nccl (host-staged "
        "transfers cannot be captured)");
  }
  if (c.comm_sms > 0) {
    throw InputError("comm_sms: " + std::to_string(c.comm_sms) +
                     " is a cuda backend option; the cpu backend has no SMs to leave free");
  }
  if (c.math != "exact") {
    throw InputError("math: '" + c.math +
                     "' is a cuda backend option (TF32, reduced-precision split-K "
                     "reductions); the cpu backend computes exactly: valid: exact");
  }
}

// What each transport cannot do: only NCCL's transfers can be captured in a graph (host-staged
// ones run on a host thread; the copy engines' flags are numbered per iteration, and a replayed
// graph would write the same numbers again), and only host-staged ones can be held back by an
// emulated link.
void check_cuda_options(const Config& c) {
  if (c.graphs && c.transport == "mpi") {
    throw InputError(
        "graphs: CUDA graphs need --backend cuda --transport nccl (host-staged "
        "transfers cannot be captured)");
  }
  if (c.graphs && c.transport == "ce") {
    throw InputError(
        "graphs: CUDA graphs need --backend cuda --transport nccl (transport ce numbers its "
        "flags per iteration; a captured graph would replay the same numbers)");
  }
  if (c.comm_sms > 0 && c.transport == "ce") {
    throw InputError("comm_sms: " + std::to_string(c.comm_sms) +
                     " leaves SMs to NCCL's kernels; transport ce's copies take none (GEMMs keep "
                     "every SM): valid with ce: auto, 0");
  }
  if (c.link.enabled() && c.transport != "mpi") {
    throw InputError(
        "link_gbps/link_latency_us: link emulation needs host-staged transfers "
        "(--transport mpi); transport " +
        c.transport + "'s transfers cannot be held back");
  }
}

}  // namespace

// Settles `auto` and checks that backend, transport, dtype and options fit together.
void resolve_backend(Config& c) {
  settle_backend(c);
  const bool cuda = c.backend == "cuda";
  if (c.transport == "auto") c.transport = cuda ? "nccl" : "mpi";
  if (cuda) {
    check_cuda_options(c);
  } else {
    check_cpu_options(c);
  }
}

void resolve_backends(Config& config, const std::vector<Config>& points) {
  resolve_backend(config);
  for (Config point : points) {
    point.backend = config.backend;
    point.transport = config.transport;
    resolve_backend(point);  // each point's dtype must suit the backend
  }
}

int check_run(const RunArgs& args, int world) {
  try {
    Config config = load_config(args, read_config_file);
    const std::vector<Config> points = sweep_points(config);
    for (const Config& point : points) make_cases(point, world);
    if (!args.dry_run) resolve_backends(config, points);
    return kExitOk;
  } catch (const InputError& e) {
    std::fprintf(stderr, "fobench: error: %s\n", printable(e.what()).c_str());
    return kExitBadInput;
  }
}

std::string case_id(size_t index) {
  char id[32];
  std::snprintf(id, sizeof id, "%04zu", index);
  return id;
}

// Whether a case already in a results file is this spec, measured to the end. A case that
// --auto-slices tuned holds the count it chose (flash:4 where the config says flash): that is
// the spec's case when the strategy is the same and the run tunes too.
bool finished(const CaseResult& c, const CaseSpec& spec, int iters, bool auto_slices) {
  CaseKey want = CaseKey::of(spec);
  const std::string family = c.strategy.substr(0, c.strategy.find(':'));
  if (auto_slices && !c.auto_slices.empty() && family == spec.strategy.strategy->name) {
    want.strategy = c.strategy;
  }
  return c.key() == want && c.iters == iters;
}

// --auto-slices: for a slicing, flash or flash_qs case, time each count that divides the rows per
// rank for a few iterations and return the fastest spec, with what was measured. Collective.
std::string tune_slices(Executor& executor, CaseSpec& spec, const ExecOptions& base, int rank) {
  const std::string name = spec.strategy.strategy->name;
  const std::vector<int> counts = spec.strategy.strategy->tuning();
  if (counts.empty()) return "";
  const int64_t block = geometry(spec.workload, spec.shape).m / spec.world;
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
    double median = rank == 0 ? median_step(r) : 0;
    const watchdog::Wait wait("the broadcast of --auto-slices' trial time");
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

std::string version_text() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  std::ostringstream out;
  out << "fobench " << FOB_VERSION << " (git " << git_commit() << ")\n"
      << "backends: cpu" << (cuda_backend_built() ? ", cuda" : "") << "\n"
      << "cuda: " << cuda_version_line() << "\n"
      << "MPI: " << mpi_library_version() << "\n"
      << "HDF5: " << major << "." << minor << "." << release << "\n"
      << "BLAS: " << blas_description() << "\n";
  return out.str();
}

}  // namespace fob
