// The CPU comm path's yardstick (a benchmark, not a test; run under mpirun, 2 ranks or more):
// the MPI library's own MPI_Allgather, MPI_Reduce_scatter and MPI_Sendrecv timed the way the
// OSU micro-benchmarks time them (warm-up, a barrier after every iteration, each rank's
// average, the slowest rank's average reported), beside fobench's own path over the same bytes:
// the `comm_only` case of `ag_gemm` and `gemm_rs` and a one-exchange plan, run by the executor
// on the CPU backend exactly as `fobench run` runs them. The two alternate, round after round,
// so that a shared machine's drift falls on both; each figure is the median over rounds.
//
//   mpirun -np 2 build/bench/fob_comm_bench [--min 4096] [--max 67108864] [--rounds 3] [--json F]
//
// Bytes are what the operation moves in all: the gathered tensor (each rank sends 1/N of it),
// the tensor each rank reduces (it keeps a 1/N block of the sum), or the block each rank sends
// and receives in the exchange.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fob/backend.h"
#include "fob/executor.h"
#include "fob/plan_builder.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace {

using fob::Plan;

// A row of 256 fp32 elements: every size from 4 KiB up is a whole number of rows per rank.
constexpr int64_t kCols = 256;
constexpr int64_t kRowBytes = kCols * 4;

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int world_of(MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  return n;
}

// OSU's counts: more iterations for small messages, where one is quick and noisy.
int iterations_for(int64_t bytes) {
  return bytes <= 64 * 1024 ? 1000 : bytes <= 4 << 20 ? 200 : 50;
}

int warmup_for(int64_t bytes) {
  return bytes <= 64 * 1024 ? 200 : 10;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The OSU way: the average over iterations on each rank, the slowest rank's average.
double osu_average(const std::function<void()>& op, int64_t bytes) {
  const int iters = iterations_for(bytes), warmup = warmup_for(bytes);
  double total = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    const double t0 = MPI_Wtime();
    op();
    const double t1 = MPI_Wtime();
    if (i >= warmup) total += t1 - t0;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  double average = total / iters;
  MPI_Allreduce(MPI_IN_PLACE, &average, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return average;
}

// fobench's own figures of one case: T as `fobench report` gives it (the median over
// iterations of the slowest rank's step) and the OSU statistic of the same steps.
struct FobTimes {
  double t = 0, osu = 0;
};

FobTimes run_fobench(fob::Backend& backend, const Plan& plan, int64_t bytes) {
  fob::Executor executor(backend, MPI_COMM_WORLD);
  fob::ExecOptions options;
  options.iters = iterations_for(bytes);
  options.warmup = warmup_for(bytes);
  options.timeout_s = 60;
  const fob::CaseResult result = executor.run_case(plan, options, "bench");
  FobTimes times;
  if (rank_of(MPI_COMM_WORLD) == 0) {
    const int ranks = result.ranks();
    std::vector<double> slowest(result.iters, 0.0), sums(ranks, 0.0);
    for (int it = 0; it < result.iters; ++it) {
      for (int r = 0; r < ranks; ++r) {
        const double s = result.step_seconds[static_cast<size_t>(it) * ranks + r];
        slowest[it] = std::max(slowest[it], s);
        sums[r] += s;
      }
    }
    times.t = median(slowest);
    times.osu = *std::max_element(sums.begin(), sums.end()) / result.iters;
    if (result.verified == 0) std::fprintf(stderr, "fob_comm_bench: a case failed to verify\n");
  }
  MPI_Bcast(&times, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return times;
}

fob::CaseSpec comm_only_case(fob::Workload workload, int64_t bytes, int world) {
  fob::CaseSpec spec;
  spec.workload = workload;
  spec.shape.batch = 1;
  spec.shape.seq = bytes / kRowBytes;
  spec.shape.hidden = kCols;
  spec.shape.ffn = 2 * world;
  spec.world = world;
  spec.strategy = fob::parse_strategy("comm_only");
  fob::validate_case(spec);
  return spec;
}

// One exchange task, `bytes` each way, with the next rank sending and the previous receiving:
// the path every strategy's point-to-point transfers take. Not a workload's plan, so the
// executor (which rebuilds the other ranks' plans from a workload for its task table) does not
// run it; this loop is its iterate(): a barrier, then the backend's begin, launch and finish.
Plan exchange_plan(int64_t bytes, int rank, int world) {
  Plan plan;
  plan.world = world;
  plan.rank = rank;
  fob::PlanBuilder b(plan);
  const int64_t rows = bytes / kRowBytes;
  const int send = b.buffer("send", rows, kCols), recv = b.buffer("recv", rows, kCols);
  b.exchange(fob::View{send, 0, rows}, b.peer(1), fob::View{recv, 0, rows}, b.peer(-1), 1,
             "exchange");
  return plan;
}

FobTimes run_exchange(fob::Backend& backend, const Plan& plan, int64_t bytes) {
  const int iters = iterations_for(bytes), warmup = warmup_for(bytes);
  backend.setup(plan);
  const std::vector<int> no_waits;  // launch() keeps a reference until finish()
  std::vector<double> slowest;
  double total = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    backend.begin(plan, i >= warmup);
    backend.launch(plan.tasks[0], no_waits);
    double step = backend.finish(60).step;
    if (i < warmup) continue;
    total += step;
    MPI_Allreduce(MPI_IN_PLACE, &step, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    slowest.push_back(step);
  }
  backend.release(plan);
  double average = total / iters;
  MPI_Allreduce(MPI_IN_PLACE, &average, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return {median(slowest), average};
}

// 64-byte aligned and filled, as the CPU backend's buffers are, so that both sides copy alike.
class Floats {
 public:
  explicit Floats(int64_t n)
      : data_(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))) {
    if (!data_) throw std::bad_alloc();
    std::fill_n(data_.get(), n, 1.0f);
  }
  float* data() { return data_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
};

struct Row {
  std::string op;
  int64_t bytes;
  double mpi_us, fob_t_us, fob_osu_us;
};

// Rounds of the MPI call and fobench's path, alternating; the medians.
Row measure(const std::string& op, int64_t bytes, int rounds, const std::function<void()>& mpi,
            const std::function<FobTimes()>& fob) {
  std::vector<double> m, t, o;
  for (int i = 0; i < rounds; ++i) {
    m.push_back(osu_average(mpi, bytes));
    const FobTimes f = fob();
    t.push_back(f.t);
    o.push_back(f.osu);
  }
  return {op, bytes, median(m) * 1e6, median(t) * 1e6, median(o) * 1e6};
}

std::string size_text(int64_t bytes) {
  char text[32];
  if (bytes >= (1 << 20)) {
    std::snprintf(text, sizeof text, "%g MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%g KiB", static_cast<double>(bytes) / 1024);
  }
  return text;
}

std::vector<Row> measure_size(fob::Backend& backend, int64_t bytes, int rounds) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), world = world_of(comm);
  const int64_t per_rank = bytes / world;
  Floats full(bytes / 4), block(per_rank / 4), other(bytes / 4);
  std::vector<int> counts(world, static_cast<int>(per_rank / 4));
  std::vector<Row> rows;

  const Plan ag = fob::make_plan(comm_only_case(fob::find_workload("ag_gemm"), bytes, world), rank);
  rows.push_back(measure(
      "all-gather", bytes, rounds,
      [&] {
        MPI_Allgather(block.data(), static_cast<int>(per_rank / 4), MPI_FLOAT, full.data(),
                      static_cast<int>(per_rank / 4), MPI_FLOAT, comm);
      },
      [&] { return run_fobench(backend, ag, bytes); }));

  const Plan rs = fob::make_plan(comm_only_case(fob::find_workload("gemm_rs"), bytes, world), rank);
  rows.push_back(measure(
      "reduce-scatter", bytes, rounds,
      [&] {
        MPI_Reduce_scatter(full.data(), block.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm);
      },
      [&] { return run_fobench(backend, rs, bytes); }));

  const Plan ex = exchange_plan(bytes, rank, world);
  rows.push_back(measure(
      "exchange", bytes, rounds,
      [&] {
        MPI_Sendrecv(full.data(), static_cast<int>(bytes / 4), MPI_FLOAT, (rank + 1) % world, 1,
                     other.data(), static_cast<int>(bytes / 4), MPI_FLOAT,
                     (rank + world - 1) % world, 1, comm, MPI_STATUS_IGNORE);
      },
      [&] { return run_exchange(backend, ex, bytes); }));
  return rows;
}

void print_header(int world) {
  std::printf(
      "# %d ranks; MPI: the library's own call timed the OSU way (slowest rank's average);\n"
      "# fobench T: comm_only's median slowest-rank step, as `fobench report` gives it;\n"
      "# fobench avg: the same steps, the OSU way. ratio = fobench T / MPI.\n",
      world);
  std::printf("%-16s%12s%14s%16s%18s%8s\n", "operation", "bytes", "MPI (us)", "fobench T (us)",
              "fobench avg (us)", "ratio");
}

void print_row(const Row& r) {
  std::printf("%-16s%12s%14.1f%16.1f%18.1f%8.2f\n", r.op.c_str(), size_text(r.bytes).c_str(),
              r.mpi_us, r.fob_t_us, r.fob_osu_us, r.fob_t_us / r.mpi_us);
  std::fflush(stdout);
}

void write_json(const std::string& path, const std::vector<Row>& rows, int world) {
  std::ofstream out(path);
  out << "{\"ranks\": " << world << ", \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << "  {\"operation\": \"" << r.op << "\", \"bytes\": " << r.bytes
        << ", \"mpi_us\": " << r.mpi_us << ", \"fobench_t_us\": " << r.fob_t_us
        << ", \"fobench_avg_us\": " << r.fob_osu_us << ", \"ratio\": " << r.fob_t_us / r.mpi_us
        << "}" << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  out << "]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MPI's own collectives beside fobench's comm_only path, the OSU way"};
  int64_t min_bytes = 4096, max_bytes = 64 << 20;
  int rounds = 3;
  std::vector<int64_t> sizes;
  std::string json;
  app.add_option("--min", min_bytes, "smallest size in bytes (powers of two from here)");
  app.add_option("--max", max_bytes, "largest size in bytes");
  app.add_option("--sizes", sizes, "these sizes in bytes instead (multiples of 1 KiB x ranks)")
      ->delimiter(',');
  app.add_option("--rounds", rounds, "alternating rounds per size; the median is reported")
      ->check(CLI::Range(1, 100));
  app.add_option("--json", json, "also write the rows as JSON here");
  CLI11_PARSE(app, argc, argv);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  const int world = world_of(MPI_COMM_WORLD);
  if (sizes.empty()) {
    for (int64_t b = min_bytes; b <= max_bytes; b *= 2) sizes.push_back(b);
  }
  for (int64_t b : sizes) {
    if (b <= 0 || b % (kRowBytes * world) != 0) {
      if (rank_of(MPI_COMM_WORLD) == 0) {
        std::fprintf(stderr, "--sizes: %lld is not a positive multiple of %lld (1 KiB x ranks)\n",
                     static_cast<long long>(b), static_cast<long long>(kRowBytes * world));
      }
      MPI_Finalize();
      return 2;
    }
  }
  std::vector<Row> all;
  {
    auto backend = fob::make_cpu_backend({});
    if (rank_of(MPI_COMM_WORLD) == 0) print_header(world);
    for (int64_t b : sizes) {
      for (const Row& r : measure_size(*backend, b, rounds)) {
        if (rank_of(MPI_COMM_WORLD) == 0) print_row(r);
        all.push_back(r);
      }
    }
  }
  if (rank_of(MPI_COMM_WORLD) == 0 && !json.empty()) write_json(json, all, world);
  MPI_Finalize();
  return 0;
}
