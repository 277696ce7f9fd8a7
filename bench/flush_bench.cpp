// What writing a results file costs as the sweep grows: the time of one flush (a case appended
// to the journal and synced) early and late in a sweep of 10, 100 and 1,000 cases, the bytes a
// case takes in the journal and in the finished file, the time to finish, and the finished
// file's size against h5repack's copy of it where h5repack is installed. A case here is what a
// 2-rank, 20-iteration, 40-task case records (the size of the sweeps in issue reports).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fob/result_files.h"
#include "fob/results.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 2, kIters = 20, kTasks = 40;

fob::CaseResult a_case(int index) {
  fob::CaseResult c;
  c.id = std::to_string(10000 + index).substr(1);
  c.workload = "mlp";
  c.strategy = "flash:4";
  c.batch = 2;
  c.seq = 128 + index;
  c.hidden = c.ffn = 256;
  c.heads = 4;
  c.dtype = "fp32";
  c.world = kRanks;
  c.iters = kIters;
  c.verified = 1;
  c.max_tasks = kTasks;
  for (int r = 0; r < kRanks; ++r) {
    for (int t = 0; t < kTasks; ++t)
      c.tasks.push_back(fob::TaskRecord{r, t, 0, 0, -1, 0, 1e6, "gemm"});
  }
  for (int i = 0; i < kIters * kRanks; ++i) c.step_seconds.push_back(1e-3 * (1 + i % 7));
  for (int i = 0; i < kIters * kRanks * kTasks; ++i) {
    c.task_start.push_back(1e-5 * i);
    c.task_end.push_back(1e-5 * i + 1e-6);
  }
  return c;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The median of `v[from, to)`.
double median(std::vector<double> v, size_t from, size_t to) {
  std::vector<double> part(v.begin() + static_cast<std::ptrdiff_t>(from),
                           v.begin() + static_cast<std::ptrdiff_t>(to));
  std::nth_element(part.begin(), part.begin() + static_cast<std::ptrdiff_t>(part.size() / 2),
                   part.end());
  return part[part.size() / 2];
}

void BM_Sweep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const fs::path dir = fs::temp_directory_path() / ("fob_flush_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "sweep.h5").string();
  fob::SystemInfo sys;
  sys.backend = "cpu";
  sys.world_size = kRanks;
  sys.timer = "host steady_clock";
  std::vector<fob::CaseResult> cases;
  for (int i = 0; i < n; ++i) cases.push_back(a_case(i));
  std::vector<double> flush_s;
  double finish_s = 0;
  uintmax_t journal_bytes = 0, final_bytes = 0;
  for (auto _ : state) {
    flush_s.clear();
    fob::ResultWriter writer(path, true, fob::RunInfo{}, sys);
    for (const fob::CaseResult& c : cases) {
      const auto t0 = Clock::now();
      writer.add_case(c);
      flush_s.push_back(seconds_since(t0));
    }
    journal_bytes = fs::file_size(path + ".partial");
    const auto t0 = Clock::now();
    writer.finish();
    finish_s = seconds_since(t0);
    final_bytes = fs::file_size(path);
  }
  const size_t tenth = std::max<size_t>(flush_s.size() / 10, 1);
  state.counters["flush_ms_first"] = 1e3 * median(flush_s, 0, tenth);
  state.counters["flush_ms_last"] = 1e3 * median(flush_s, flush_s.size() - tenth, flush_s.size());
  state.counters["journal_KiB_per_case"] = journal_bytes / 1024.0 / n;
  state.counters["file_KiB_per_case"] = final_bytes / 1024.0 / n;
  state.counters["finish_ms"] = 1e3 * finish_s;
  const std::string repacked = (dir / "repacked.h5").string();
  const std::string command = "h5repack '" + path + "' '" + repacked + "' 2>/dev/null";
  if (std::system(command.c_str()) == 0 && fs::exists(repacked)) {
    state.counters["file_vs_h5repack"] = static_cast<double>(final_bytes) / fs::file_size(repacked);
  }
  fs::remove_all(dir);
}

BENCHMARK(BM_Sweep)->Arg(10)->Arg(100)->Arg(1000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
