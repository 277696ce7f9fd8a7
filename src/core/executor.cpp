#include "fob/executor.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "fob/metrics.h"
#include "fob/oracle.h"
#include "fob/speed_probe.h"
#include "fob/tolerance.h"
#include "fob/workload.h"
#include "gather.h"
#include "watchdog.h"

namespace fob {
namespace {

// Completes `request`, yielding the core between tests. A blocking MPI call busy-polls without
// yielding (Open MPI's default where a host is not oversubscribed by ranks), and a rank waiting
// for its peer at the end of an iteration then held the core the peer's comm thread needed
// until the scheduler's next tick: transfers of a few microseconds took 4 ms, several rounds
// on end.
void wait_yielding(MPI_Request& request) {
  int done = 0;
  while (MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done) sched_yield();
}

template <typename T>
std::vector<char> as_bytes(const std::vector<T>& v) {
  std::vector<char> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Lines (none holding a newline) as one text, and back: for gathering strings.
std::vector<char> joined_lines(const std::vector<std::string>& lines) {
  std::vector<char> out;
  for (const std::string& line : lines) {
    out.insert(out.end(), line.begin(), line.end());
    out.push_back('\n');
  }
  return out;
}

std::vector<std::string> split_lines(const std::vector<char>& bytes) {
  std::vector<std::string> out;
  std::string line;
  for (char ch : bytes) {
    if (ch != '\n') {
      line += ch;
      continue;
    }
    out.push_back(line);
    line.clear();
  }
  return out;
}

template <typename T>
std::vector<T> from_bytes(const std::vector<char>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

Executor::Executor(Backend& backend, MPI_Comm comm) : backend_(backend), comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &world_);
}

namespace {

// Each task's dependencies on the other stream; same-stream order is the stream's own.
std::vector<std::vector<int>> cross_stream_waits(const Plan& plan) {
  std::vector<std::vector<int>> waits(plan.tasks.size());
  for (const Task& task : plan.tasks) {
    for (int dep : task.deps) {
      if (plan.tasks[dep].stream != task.stream) waits[task.id].push_back(dep);
    }
  }
  return waits;
}

}  // namespace

IterationTimes Executor::iterate(const Plan& plan, double timeout_s, bool timed) {
  // Worked out once per case in run_cases(), not between the iteration's timestamps.
  const std::vector<std::vector<int>>& waits = waits_.at(&plan);
  // An iteration no timer could take is run again (IterationTimes::retry): the backend times
  // the next one another way, so a second retry means it cannot, and the times stay NaN.
  for (int attempt = 0;; ++attempt) {
    {
      const watchdog::Wait wait("the barrier that starts an iteration");
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Ibarrier(comm_, &request);
      wait_yielding(request);
    }
    backend_.begin(plan, timed);
    for (const Task& task : plan.tasks) backend_.launch(task, waits[task.id]);
    IterationTimes times = backend_.finish(timeout_s);
    // Every rank runs the same number of attempts, so that their barriers pair up.
    int again = times.retry && attempt < 2 ? 1 : 0;
    {
      const watchdog::Wait wait("the reduction of whether an iteration is run again");
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Iallreduce(MPI_IN_PLACE, &again, 1, MPI_INT, MPI_MAX, comm_, &request);
      wait_yielding(request);
    }
    if (!again) return times;
  }
}

const std::vector<double>& Executor::expected(const Plan& plan, const OutputCheck& check,
                                              uint64_t seed) {
  // The same oracle output serves every strategy of a shape; it is the slow part of verifying.
  const OracleKey key{plan.workload, check.kind,        plan.shape, plan.world,
                      plan.rank,     plan.input_period, seed};
  auto it = std::find_if(oracle_cache_.begin(), oracle_cache_.end(),
                         [&](const auto& kept) { return kept.first == key; });
  if (it == oracle_cache_.end()) {
    if (oracle_cache_.size() > 8) oracle_cache_.clear();
    oracle_cache_.emplace_back(key, expected_output(plan, check, seed));
    it = std::prev(oracle_cache_.end());
  }
  return it->second;
}

int Executor::verify(const Plan& plan, const ExecOptions& options, const std::string& id,
                     const char* when, double* max_err) {
  backend_.poison(plan);
  iterate(plan, options.timeout_s, false);
  int ok = 1;
  *max_err = 0;
  for (const OutputCheck& check : plan.checks) {
    const BufferSpec& spec = plan.buffers[check.buffer];
    const std::vector<double> got = backend_.read(plan, check.buffer);
    // The oracle answers in the tensor's row order; a relaid buffer holds its rows elsewhere.
    const std::vector<double> want = in_buffer_order(spec, expected(plan, check, options.seed));
    const int64_t cols = spec.cols;
    // fp32/fp64 must be bit-exact: integer-valued data leaves no room for rounding. bf16/fp16
    // round on every store, and attention's softmax is not exact, so they get a stated bound
    // relative to the buffer's scale.
    // Attention's O averages values, so it is far below 1: a floor of 1 would let a wrong
    // softmax through in bf16. Its bound scales with the buffer's own largest value.
    const Tolerance tolerance = check_tolerance(plan, check.kind, options.fast_math);
    double scale = tolerance.own_scale ? 0 : 1;
    for (double w : want) scale = std::max(scale, std::fabs(w));
    const double bound = tolerance.bound * scale;
    int64_t wrong = 0, first = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      // Written so that NaN (poison never overwritten) always counts as wrong.
      if (!(std::fabs(got[i] - want[i]) <= bound)) {
        if (first < 0) first = static_cast<int64_t>(i);
        ++wrong;
      }
      const double err = std::fabs(got[i] - want[i]);
      *max_err =
          std::max(*max_err, std::isnan(err) ? std::numeric_limits<double>::infinity() : err);
    }
    if (wrong > 0) {
      ok = 0;
      std::fprintf(stderr,
                   "VERIFY FAILED case %s (%s %s), %s: rank %d buffer %s (%s): element [%lld, "
                   "%lld] = %g, expected %g; %lld of %zu elements differ\n",
                   id.c_str(), to_string(plan.workload), plan.strategy.text.c_str(), when, rank_,
                   spec.name.c_str(), to_string(check.kind),
                   static_cast<long long>(logical_row(spec, first / cols)),
                   static_cast<long long>(first % cols), got[first], want[first],
                   static_cast<long long>(wrong), got.size());
    }
  }
  return ok;
}

CaseResult Executor::run_case(const Plan& plan, const ExecOptions& options, const std::string& id) {
  return run_cases({&plan}, {id}, options).front();
}

namespace {

CaseResult case_header(const Plan& plan, const ExecOptions& options, const std::string& id,
                       int world) {
  CaseResult result = case_from_plan(plan, world, id);
  result.warmup = options.warmup;
  return result;
}

// Every rank's task table, on rank 0: its own plan's, and the others' from plans built again
// from the case (a plan is a pure function of its case and rank), so that only timings need to
// travel. A loopback case's one process runs one plan.
void set_task_table(CaseResult& result, const Plan& mine, int world) {
  const CaseSpec spec{.workload = mine.workload,
                      .shape = mine.shape,
                      .dtype = mine.dtype,
                      .world = mine.world,
                      .strategy = mine.strategy};
  std::vector<Plan> others;
  others.reserve(static_cast<size_t>(world));  // no reallocation: `ranks` points into it
  std::vector<const Plan*> ranks;
  for (int r = 0; r < world; ++r) {
    if (world == 1 || r == mine.rank) {
      ranks.push_back(&mine);
    } else {
      others.push_back(make_plan(spec, r));
      ranks.push_back(&others.back());
    }
  }
  set_task_table(result, ranks);
}

}  // namespace

// The slot's warm-up and timed iterations, with the host's speed and CPU use around them.
void Executor::time_slot(const Plan& plan, const ExecOptions& options, int warmup, int iters,
                         Samples& samples) {
  // The host's speed just before and just after the slot: a slow phase shows in either.
  samples.probe = host_speed_probe();
  const HostCpu before = host_cpu_now();
  for (int i = 0; i < warmup; ++i) iterate(plan, options.timeout_s, true);
  time_iterations(plan, options, iters, samples);
  const HostCpu after = host_cpu_now();
  samples.probe = std::max(samples.probe, host_speed_probe());
  samples.busy_known = samples.busy_known && before.busy >= 0 && after.busy >= 0;
  samples.busy += after.busy - before.busy;
  samples.steal += after.steal - before.steal;
  samples.own += after.own - before.own;
  samples.wall += after.wall - before.wall;
}

std::vector<CaseResult> Executor::run_cases(const std::vector<const Plan*>& plans,
                                            const std::vector<std::string>& ids,
                                            const ExecOptions& options,
                                            const CaseCallback& after_slot) {
  const size_t n = plans.size();
  const int rounds = std::clamp(options.rounds, 1, options.iters);
  // One round needs one case's buffers at a time; interleaving keeps all of them resident.
  const bool resident = rounds > 1;
  std::vector<CaseResult> results(n);
  std::vector<Samples> samples(n);
  for (const Plan* plan : plans) waits_[plan] = cross_stream_waits(*plan);
  for (size_t c = 0; c < n; ++c) {
    results[c] = case_header(*plans[c], options, ids[c], world_);
    if (rank_ == 0) set_task_table(results[c], *plans[c], world_);
    if (resident) backend_.setup(*plans[c]);
  }
  for (int round = 0; round < rounds; ++round) {
    const int iters = options.iters / rounds + (round < options.iters % rounds ? 1 : 0);
    // After a switch between cases the caches hold another case's data: warm up again.
    const int warmup = round == 0 ? options.warmup : std::min(options.warmup, 1);
    for (size_t c = 0; c < n; ++c) {
      const Plan& plan = *plans[c];
      const watchdog::Context context("case " + results[c].id + " (" + results[c].workload + " " +
                                      results[c].strategy + "), round " +
                                      std::to_string(round + 1) + " of " + std::to_string(rounds));
      try {
        if (!resident) backend_.setup(plan);
        if (round == 0) {
          verify_case(plan, options, "before timing", results[c]);
          // Rank 0's, as its facts are; fixed once the plan is prepared, and recorded with the
          // case's first round.
          results[c].transfer_sms = backend_.transfer_sms(plan);
        }
        // Timed on data like a trained layer's; verified (before and after) on integers.
        backend_.fill_timing_data(plan);
        time_slot(plan, options, warmup, iters, samples[c]);
        if (round == rounds - 1) {
          // What the hardware did, while the case is prepared: its last round is done.
          results[c].facts = gather_facts(plan, samples[c]);
          // Once more after the timed iterations, as nccl-tests checks after its loop: the
          // iterations that were timed (with --graphs, a replay of the captured graph, not the
          // eager first run) must compute the same result.
          verify_case(plan, options, "after the timed iterations", results[c]);
        }
        if (!resident) backend_.release(plan);
      } catch (const RuntimeFault& e) {
        throw RuntimeFault("case " + results[c].id + " (" + results[c].workload + " " +
                           results[c].strategy + "): " + e.what());
      }
      // Every slot is gathered and handed on at once: nothing measured waits for the others.
      gather(plan, samples[c], results[c]);
      // The next round appends to what is on rank 0 now; only the progress line keeps all.
      samples[c].clear_iterations();
      if (after_slot) after_slot(results[c], round, rounds);
      wait_for_the_write(*plans[c], iters, results[c].id);
    }
  }
  if (resident) {
    for (const Plan* plan : plans) backend_.release(*plan);
  }
  for (const Plan* plan : plans) waits_.erase(plan);
  return results;
}

// Rank 0 writes each slot as it is gathered (the callback) while the other ranks would already
// wait in the next step: that write is rank 0 working, not lost, so the others wait for it here
// with the write's own allowance on top of --timeout: 10 s to sync, and 10 MB/s for the bytes
// (the slot's task times and steps), which any disk that holds a results file writes.
void Executor::wait_for_the_write(const Plan& plan, int iters, const std::string& id) {
  const double bytes = 16.0 * static_cast<double>(plan.tasks.size() + 1) * world_ * iters;
  const watchdog::Wait wait("rank 0 writing case " + id + " to disk", 10.0 + bytes / 10e6);
  MPI_Barrier(comm_);
}

void Executor::verify_case(const Plan& plan, const ExecOptions& options, const char* when,
                           CaseResult& result) {
  if (!options.verify || plan.checks.empty()) return;
  double err = 0;
  int ok = verify(plan, options, result.id, when, &err);
  {
    const watchdog::Wait wait(std::string("the reduction of the verification ") + when);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm_);
    MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, comm_);
  }
  // Verified only when every check passed: one failure, before or after timing, is kept.
  const bool first = result.verified < 0;
  result.verified = first ? ok : std::min(result.verified, ok);
  result.max_abs_err = first ? err : std::max(result.max_abs_err, err);
}

void Executor::time_iterations(const Plan& plan, const ExecOptions& options, int iters,
                               Samples& samples) {
  auto last_report = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    IterationTimes t = iterate(plan, options.timeout_s, true);
    samples.steps.push_back(t.step);
    samples.starts.insert(samples.starts.end(), t.start.begin(), t.start.end());
    samples.ends.insert(samples.ends.end(), t.end.begin(), t.end.end());
    samples.launches.push_back(t.launch);
    std::string timer = t.timer.empty() ? backend_.timer() : t.timer;
    // A timer text names how the iteration was taken; one whose device started before its last
    // launch may hold launch time in its step, which its label says.
    if (t.gate_early) timer += kGateOpenedEarly;
    samples.timers.push_back(timer);
    if (!options.progress_label.empty()) {
      // Outside the timed interval: the next iteration starts with a barrier anyway.
      double step = t.step;
      {
        const watchdog::Wait wait("the reduction of timed iteration " + std::to_string(i + 1) +
                                  "'s step time");
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Iallreduce(MPI_IN_PLACE, &step, 1, MPI_DOUBLE, MPI_MAX, comm_, &request);
        wait_yielding(request);
      }
      samples.slowest.push_back(step);
      auto now = std::chrono::steady_clock::now();
      if (rank_ == 0 && now - last_report > std::chrono::seconds(2)) {
        last_report = now;
        std::fprintf(stderr, "[fobench] %s %s: iteration %zu, running median %.3f ms\n",
                     options.progress_label.c_str(), plan.strategy.text.c_str(),
                     samples.slowest.size(), median(samples.slowest) * 1e3);
      }
    }
  }
}

std::vector<std::string> Executor::host_load_facts(const Samples& samples) {
  const watchdog::Wait wait("summing the CPU time of the ranks of each host");
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  double own = samples.own;
  int known = samples.busy_known ? 1 : 0, local = 0;
  MPI_Allreduce(MPI_IN_PLACE, &own, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Allreduce(MPI_IN_PLACE, &known, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  // /proc/stat counts in clock ticks (10 ms): over less than half a second of slots the
  // quotient is mostly rounding.
  if (local != 0 || known == 0 || !(samples.wall >= 0.5)) return {};
  char others[64], steal[64], load[64];
  std::snprintf(others, sizeof others, "host_others_cpus=%.3f",
                std::max(0.0, samples.busy - own) / samples.wall);
  std::snprintf(steal, sizeof steal, "host_steal_cpus=%.3f",
                std::max(0.0, samples.steal) / samples.wall);
  std::snprintf(load, sizeof load, "host_loadavg=%.2f", host_load_average());
  return {others, steal, load};
}

std::vector<std::string> Executor::gather_facts(const Plan& plan, const Samples& samples) {
  std::vector<std::string> mine;
  for (const std::string& fact : backend_.case_facts(plan)) {
    mine.push_back("rank " + std::to_string(rank_) + ": " + fact);
  }
  for (const std::string& fact : host_load_facts(samples)) {
    mine.push_back("rank " + std::to_string(rank_) + ": " + fact);
  }
  const watchdog::Wait wait("gathering every rank's account of how the case ran");
  const auto all = gather_bytes(comm_, joined_lines(mine));
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  for (const auto& bytes : all) {
    for (std::string& line : split_lines(bytes)) out.push_back(std::move(line));
  }
  return out;
}

void Executor::gather(const Plan& plan, const Samples& samples, CaseResult& result) {
  const int iters = static_cast<int>(samples.steps.size());
  const watchdog::Wait wait("gathering the case's timings to rank 0");
  auto all_steps = gather_bytes(comm_, as_bytes(samples.steps));
  auto all_starts = gather_bytes(comm_, as_bytes(samples.starts));
  auto all_ends = gather_bytes(comm_, as_bytes(samples.ends));
  auto all_timers = gather_bytes(comm_, joined_lines(samples.timers));
  auto all_launches = gather_bytes(comm_, as_bytes(samples.launches));
  double probe = samples.probe;
  MPI_Allreduce(MPI_IN_PLACE, &probe, 1, MPI_DOUBLE, MPI_MAX, comm_);
  if (rank_ != 0) {
    result.iters += iters;
    result.round_iters.push_back(iters);
    return;
  }
  RoundTimes round = empty_round(result, iters);
  round.probe = probe;
  round.timers.resize(round.step_seconds.size());
  for (int r = 0; r < world_; ++r) {
    const auto s = from_bytes<double>(all_steps[r]);
    const auto st = from_bytes<double>(all_starts[r]);
    const auto en = from_bytes<double>(all_ends[r]);
    const auto timers = split_lines(all_timers[r]);
    const auto launches = from_bytes<double>(all_launches[r]);
    const size_t ran = iters > 0 ? st.size() / static_cast<size_t>(iters) : 0;
    size_t planned = 0;
    for (int t = 0; t < result.max_tasks; ++t) planned += result.task_record(r, t).task >= 0;
    if (s.size() != static_cast<size_t>(iters) || en.size() != st.size() || ran != planned ||
        timers.size() != s.size() || launches.size() != s.size()) {
      throw std::logic_error("case " + result.id + ": rank " + std::to_string(r) + " ran " +
                             std::to_string(ran) + " tasks in " + std::to_string(s.size()) +
                             " iterations; its plan, built again from the case, has " +
                             std::to_string(planned) + " (plan " + plan.strategy.text +
                             " is not a pure function of its case)");
    }
    for (int it = 0; it < iters; ++it) {
      round.step_seconds[static_cast<size_t>(it) * world_ + r] = s[it];
      round.timers[static_cast<size_t>(it) * world_ + r] = timers[it];
      round.launch_seconds[static_cast<size_t>(it) * world_ + r] = launches[it];
      for (size_t t = 0; t < ran; ++t) {
        const size_t at = result.timing_index(it, r, static_cast<int>(t));
        round.task_start[at] = st[it * ran + t];
        round.task_end[at] = en[it * ran + t];
      }
    }
  }
  append_round(result, round);
}

}  // namespace fob
