// `fobench sim`: the plans `run` would execute, priced with a machine file instead of run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "backends/cpu/host_memory.h"
#include "commands.h"
#include "fob/cases.h"
#include "fob/machine.h"
#include "fob/metrics.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/sim.h"
#include "fob/text_file.h"
#include "fob/version.h"
#include "fob/workload.h"
#include "sim_bounds.h"
#include "sim_costs.h"
#include "sim_tune.h"

namespace fob {
namespace {

std::vector<int> parse_worlds(const std::string& text) {
  std::vector<int> worlds;
  for (const std::string& item : split_list(text)) {
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > kMaxWorld) {
      throw InputError("--world: " + quote_value(item) +
                       " is not a world size; valid: 1..65536, as in 4,8,64");
    }
    worlds.push_back(static_cast<int>(n));
  }
  if (worlds.empty()) throw InputError("--world: " + quote_value(text) + " names no world size");
  return worlds;
}

std::string read_text(const std::string& path) {
  return read_regular_file(path, "config");
}

// What the simulation of a sweep keeps: every case (its timings only where a file is written)
// and every case's stats, in the cases' order.
struct Simulated {
  std::vector<CaseResult> cases;
  std::vector<CaseStats> stats;
};

// The cores that simulate cases at once.
unsigned sim_threads(size_t cases) {
  return std::max(1u, std::min(std::thread::hardware_concurrency(), static_cast<unsigned>(cases)));
}

// Progress on stderr once a simulation runs past kQuietSeconds: the cases done and the share of
// the estimated work (each case's tasks) done, every kEverySeconds, from a thread of its own so
// that one long case does not silence it.
class Progress {
 public:
  static constexpr double kQuietSeconds = 3, kEverySeconds = 5;
  explicit Progress(const SimEstimate& estimate) : estimate_(estimate) {
    for (const SimCaseCost& c : estimate.cases) total_ += static_cast<double>(c.work());
    thread_ = std::thread([this] { report(); });
  }
  ~Progress() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void done(size_t i) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++cases_;
    work_ += static_cast<double>(estimate_.cases[i].work());
  }

 private:
  void report() {
    const auto start = std::chrono::steady_clock::now();
    auto next = start + std::chrono::duration<double>(kQuietSeconds);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_until(lock, next, [this] { return stop_; })) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr,
                   "fobench sim: %zu of %zu cases simulated, about %.0f%% of the estimated "
                   "work, after %.0f s\n",
                   cases_, estimate_.cases.size(), total_ > 0 ? 100 * work_ / total_ : 0.0,
                   seconds);
      next += std::chrono::duration<double>(kEverySeconds);
    }
  }
  const SimEstimate& estimate_;
  double total_ = 0, work_ = 0;
  size_t cases_ = 0;
  bool stop_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

// Cases are independent, so the host's cores simulate several at once; results keep the
// cases' order. A case reported but not written keeps only what its summary row needs (its
// key and stats): a sweep of large worlds then holds one case's timings per core at a time.
// The first error is rethrown once every worker has stopped.
Simulated simulate_all(const std::vector<PricedCase>& specs, bool keep_timings,
                       const SimEstimate& estimate) {
  Simulated out;
  out.cases.resize(specs.size());
  out.stats.resize(specs.size());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  Progress progress(estimate);
  auto work = [&] {
    for (size_t i = next++; i < specs.size(); i = next++) {
      try {
        char id[32];
        std::snprintf(id, sizeof id, "%04zu", i);
        CaseResult result = simulate_spec(specs[i].spec, *specs[i].cost, id);
        if (specs[i].cost->path() == TransferPath::copy_engines) result.facts = {kCeFact};
        out.stats[i] = case_stats(result);
        if (!keep_timings) result = described(result);
        out.cases[i] = std::move(result);
        progress.done(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = specs.size();
      }
    }
  };
  const unsigned threads = sim_threads(specs.size());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  return out;
}

std::string machine_summary(const Machine& m) {
  std::ostringstream out;
  out << "machine '" << m.name << "' (" << m.source << "); ";
  for (const auto& [dtype, c] : m.compute) {
    out << to_string(dtype) << " peak " << c.peak_flops / 1e12 << " TFLOP/s, memory "
        << c.memory_bytes_per_s / 1e9 << " GB/s, " << c.gemm_efficiency.size()
        << " GEMM efficiency points; ";
  }
  for (const LinkClass& l : m.links) {
    out << "link " << l.name << " " << l.bytes_per_s / 1e9 << " GB/s per rank and direction, "
        << l.latency_s * 1e6 << " us latency; ";
  }
  out << m.ranks_per_node << " ranks per node over " << m.intra_node << ", nodes over "
      << m.inter_node << "; GEMMs " << m.contention
      << "x slower while a transfer is in flight; transfers " << m.transfer_contention
      << "x slower while a rank they involve computes, and posted up to "
      << m.comm_start_delay_s * 1e6 << " us late when ready while their rank computes; tasks start "
      << m.launch_compute_s * 1e6 << " us (compute) and " << m.launch_comm_s * 1e6
      << " us (comm) after they are ready; concurrent messages share a rank's link";
  return out.str();
}

// The machine file, with --ranks-per-node applied; the default world (one node) must be one
// the simulator takes.
Machine machine_for(const SimArgs& args) {
  Machine machine = load_machine(args.machine);
  if (args.ranks_per_node) {
    if (*args.ranks_per_node < 1) {
      throw InputError("--ranks-per-node: " + std::to_string(*args.ranks_per_node) +
                       " must be at least 1");
    }
    machine.ranks_per_node = *args.ranks_per_node;
  }
  if (args.worlds.empty() && machine.ranks_per_node > kMaxWorld) {
    throw InputError(
        std::string(args.ranks_per_node ? "--ranks-per-node" : "topology.ranks_per_node") + ": " +
        std::to_string(machine.ranks_per_node) + " ranks is past the simulator's " +
        std::to_string(kMaxWorld) + " (the default --world is one node); valid: 1.." +
        std::to_string(kMaxWorld));
  }
  return machine;
}

void check_dtypes(const std::vector<Config>& points, const Machine& machine) {
  for (const Config& point : points) {
    if (machine.compute.count(point.dtype)) continue;
    std::string have;
    for (const auto& [d, c] : machine.compute) {
      have += (have.empty() ? "" : ", ") + std::string(to_string(d));
    }
    throw InputError(std::string("dtype: '") + to_string(point.dtype) + "' is not in machine " +
                     quote_value(machine.name) + "; valid: " + have);
  }
}

// What a simulated file records of its run; no clock took its times, and it says so.
// /system's transport names the paths the transfers were priced on.
ResultFile simulated_file(const SimArgs& args, const Config& config, const Machine& machine,
                          const std::vector<int>& worlds, const std::string& paths) {
  ResultFile file;
  file.run.git_commit = git_commit();
  file.run.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  file.run.command_line = args.run.command_line;
  file.run.config_yaml = config.to_yaml();
  file.run.tuned = args.tune;
  file.system.backend = "sim";
  file.system.transport = "sim (" + paths + ")";
  file.system.world_size = *std::max_element(worlds.begin(), worlds.end());
  file.system.link_emulation = "none";
  file.system.simulated = machine_summary(machine);
  // A simulated file must never pass for a measured one, also where only the timer is compared
  // (fobench compare).
  file.system.timer = "simulated (machine file " + args.machine + ")";
  return file;
}

// The -o file, written whole or not at all: a simulation is run again, never resumed, so the
// journal of part of one (NAME.h5.partial) is removed when anything fails before the file is
// finished, a bad_alloc or a full disk included. An empty path: no file.
class SimOutput {
 public:
  SimOutput(const SimArgs& args, const ResultFile& file, const std::string& path) {
    if (path.empty()) return;
    std::vector<std::string> inputs{args.machine};
    if (!args.run.config_path.empty()) inputs.push_back(args.run.config_path);
    writer_ = std::make_unique<ResultWriter>(path, args.run.force, file.run, file.system, inputs);
  }
  ~SimOutput() {
    if (!writer_ || finished_) return;
    // Removed while this process still holds the file's lock.
    std::error_code ec;
    std::filesystem::remove(writer_->partial_path(), ec);
    writer_.reset();
  }
  SimOutput(const SimOutput&) = delete;
  SimOutput& operator=(const SimOutput&) = delete;

  void write(const std::vector<CaseResult>& cases) {
    if (!writer_) return;
    // Nothing here was measured: one flush for every case.
    writer_->add_cases(cases);
    writer_->finish();
    finished_ = true;
  }

 private:
  std::unique_ptr<ResultWriter> writer_;
  bool finished_ = false;
};

}  // namespace

int sim_command(const SimArgs& args) {
  return guarded("sim", [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const Config config = load_config(args.run, read_text);
    const std::vector<Config> points = sweep_points(config);
    const Machine machine = machine_for(args);
    const std::vector<int> worlds =
        args.worlds.empty() ? std::vector<int>{machine.ranks_per_node} : parse_worlds(args.worlds);
    const TableFormat format = parse_table_format(args.format);
    check_dtypes(points, machine);
    // Every case is checked, counted and its cost estimated before anything is simulated,
    // allocated or written.
    const SimCosts costs(machine, config.transport, args.tune);
    const std::vector<PricedCase> priced = costs.price(sim_cases(points, worlds, args.tune));
    std::vector<CaseSpec> specs;
    for (const PricedCase& c : priced) specs.push_back(c.spec);
    const std::optional<std::string> output = given(args.run, "output");
    const bool writes = !output.value_or("").empty();
    const SimEstimate estimate =
        check_sim_bounds(specs, costs.main(), writes, sim_threads(specs.size()),
                         host_available_bytes(), args.tune ? "sim --tune" : "sim");
    ResultFile file = simulated_file(args, config, machine, worlds, SimCosts::paths(priced));
    SimOutput out(args, file, writes ? *output : "");
    Simulated simulated = simulate_all(priced, writes, estimate);
    file.cases = std::move(simulated.cases);
    file.stats = std::move(simulated.stats);
    out.write(file.cases);
    if (args.tune) {
      write_table(std::cout, tune_document(file, summarize(file)), format);
    } else {
      write_report(std::cout, file, format);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "fobench sim: %zu cases simulated in %.2f s%s%s\n", specs.size(), seconds,
                 writes ? "; wrote " : "", writes ? output->c_str() : "");
    return kExitOk;
  });
}

}  // namespace fob
