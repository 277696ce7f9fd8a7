// A case's identity and records: CaseKey, and the parts of a CaseResult that follow from its
// plans (the task table) or accumulate round by round (the timings).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "case_timers.h"
#include "fob/results.h"
#include "fob/workload.h"

namespace fob {

TaskLabel::TaskLabel(const std::string& s) : TaskLabel(s.c_str()) {}

TaskLabel::TaskLabel(const char* s) {
  // Longer labels are cut: the file stores kLabelChars characters.
  std::strncpy(text, s, kLabelChars);
}

size_t TaskLabel::size() const {
  return std::strlen(text);
}

namespace {

CaseKey key_of(Workload workload, const StrategySpec& strategy, const Shape& shape, DType dtype,
               int world) {
  CaseKey key;
  key.workload = to_string(workload);
  key.strategy = strategy.text;
  key.batch = shape.batch;
  key.seq = shape.seq;
  key.hidden = shape.hidden;
  key.ffn = shape.ffn;
  key.heads = shape.head_count();
  if (workload != nullptr && workload->has_experts) {
    key.experts = shape.experts();
    key.top_k = shape.top_k();
    key.expert_ffn = shape.expert_ffn();
    key.moe_skew = shape.moe.skew;
    key.capacity_factor = shape.moe.capacity_factor;
    key.moe_seed = shape.moe_seed();
  }
  key.dtype = to_string(dtype);
  key.world = world;
  return key;
}

}  // namespace

CaseKey CaseKey::of(const CaseSpec& spec) {
  return key_of(spec.workload, spec.strategy, spec.shape, spec.dtype, spec.world);
}

CaseKey CaseKey::of(const Plan& plan) {
  return key_of(plan.workload, plan.strategy, plan.shape, plan.dtype, plan.world);
}

const Strategy* CaseKey::definition() const {
  return find_strategy(strategy);
}

StrategyRole CaseKey::role() const {
  return strategy_role(strategy);
}

bool CaseKey::is_reference() const {
  const Strategy* s = definition();
  return s != nullptr && s->is_reference();
}

CaseKey CaseKey::with_strategy(const std::string& other) const {
  CaseKey key = *this;
  key.strategy = other;
  return key;
}

CaseSpec CaseKey::spec() const {
  CaseSpec spec;
  spec.workload = parse_workload(workload);
  spec.shape.batch = batch;
  spec.shape.seq = seq;
  spec.shape.hidden = hidden;
  spec.shape.ffn = ffn;
  spec.shape.heads = heads;
  spec.shape.moe = moe();
  spec.dtype = parse_dtype(dtype);
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return spec;
}

std::string CaseKey::text() const {
  std::string text = workload + " " + strategy + " b" + std::to_string(batch) + " s" +
                     std::to_string(seq) + " h" + std::to_string(hidden) + " f" +
                     std::to_string(ffn) + " heads" + std::to_string(heads) + " " + dtype +
                     " N=" + std::to_string(world);
  if (experts > 0) {
    char moe_text[160];
    std::snprintf(moe_text, sizeof moe_text, " E%lld k%lld F%lld skew%g cap%g seed%lld",
                  static_cast<long long>(experts), static_cast<long long>(top_k),
                  static_cast<long long>(expert_ffn), moe_skew, capacity_factor,
                  static_cast<long long>(moe_seed));
    text.append(moe_text);
  }
  return text;
}

CaseResult case_from_plan(const Plan& plan, int world, const std::string& id) {
  CaseResult result;
  static_cast<CaseKey&>(result) = CaseKey::of(plan);
  result.world = world;
  result.id = id;
  return result;
}

CaseResult described(const CaseResult& c) {
  CaseResult d;
  static_cast<CaseKey&>(d) = c.key();
  d.id = c.id;
  d.iters = c.iters;
  d.warmup = c.warmup;
  d.verified = c.verified;
  d.max_abs_err = c.max_abs_err;
  d.auto_slices = c.auto_slices;
  d.round_iters = c.round_iters;
  // Small ([iters][ranks] bytes), and what the file's /system timer is worked out from.
  d.timers = c.timers;
  d.iteration_timer = c.iteration_timer;
  d.facts = c.facts;
  d.transfer_sms = c.transfer_sms;
  d.moe_load = c.moe_load;
  return d;
}

int32_t files_transfer_sms(const std::vector<CaseResult>& cases) {
  int32_t most = -1;
  for (const CaseResult& c : cases) most = std::max(most, c.transfer_sms);
  return most;
}

std::string transport_text(const ResultFile& file) {
  std::vector<std::string> parts;
  if (file.system.copy_engines >= 0) {
    parts.push_back("copy engines: " + std::to_string(file.system.copy_engines));
  }
  // The transports' counts are what their transfers may take (NCCL's CTA limit, the blocks of
  // the copy engines' partial sums), not what they were seen to occupy.
  if (const int32_t sms = files_transfer_sms(file.cases); sms == 0) {
    parts.emplace_back("transfers take 0 SMs");
  } else if (sms > 0) {
    parts.push_back("transfers take up to " + std::to_string(sms) + " SMs");
  }
  std::string text = file.system.transport;
  if (parts.empty()) return text;
  text += " (" + parts.front();
  for (size_t i = 1; i < parts.size(); ++i) text += "; " + parts[i];
  return text + ")";
}

int32_t recorded_peer(const Task& task) {
  if (!task.is_transfer()) return -1;
  return task.send_peer >= 0 ? task.send_peer : task.recv_peer;
}

void set_task_table(CaseResult& result, const std::vector<const Plan*>& plans) {
  int32_t max_tasks = 0;
  for (const Plan* p : plans)
    max_tasks = std::max(max_tasks, static_cast<int32_t>(p->tasks.size()));
  result.max_tasks = max_tasks;
  result.tasks.assign(plans.size() * static_cast<size_t>(max_tasks), TaskRecord{});
  result.deps.clear();
  for (size_t r = 0; r < plans.size(); ++r) {
    const int32_t rank = static_cast<int32_t>(r);
    for (const Task& t : plans[r]->tasks) {
      result.tasks[result.task_index(rank, t.id)] = TaskRecord{rank,
                                                               t.id,
                                                               static_cast<int8_t>(t.stream),
                                                               static_cast<int8_t>(t.kind),
                                                               recorded_peer(t),
                                                               t.bytes,
                                                               t.flops,
                                                               t.label};
      for (int d : t.deps) result.deps.push_back({rank, t.id, d});
    }
  }
  result.moe_load = moe_load(plans);
}

void append_round(CaseResult& result, const RoundTimes& round) {
  const size_t ranks = static_cast<size_t>(result.ranks());
  const size_t per_iter = ranks * static_cast<size_t>(result.max_tasks);
  const size_t iters = static_cast<size_t>(round.iters);
  if (round.step_seconds.size() != iters * ranks || round.task_start.size() != iters * per_iter ||
      round.task_end.size() != iters * per_iter) {
    throw std::logic_error("case " + result.id + ": a round's timings do not match its task table");
  }
  append_round_timers(result, round);
  // Launch times are optional as timers are: all or none of a case's iterations have a slot.
  if (!round.launch_seconds.empty() || !result.launch_seconds.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    result.launch_seconds.resize(static_cast<size_t>(result.iters) * ranks, nan);
    if (round.launch_seconds.size() == iters * ranks) {
      result.launch_seconds.insert(result.launch_seconds.end(), round.launch_seconds.begin(),
                                   round.launch_seconds.end());
    } else {
      result.launch_seconds.resize(result.launch_seconds.size() + iters * ranks, nan);
    }
  }
  result.step_seconds.insert(result.step_seconds.end(), round.step_seconds.begin(),
                             round.step_seconds.end());
  result.task_start.insert(result.task_start.end(), round.task_start.begin(),
                           round.task_start.end());
  result.task_end.insert(result.task_end.end(), round.task_end.begin(), round.task_end.end());
  result.iters += round.iters;
  // Probes are optional as launch times are: once one round has one, every round has a slot.
  if (std::isfinite(round.probe) || !result.round_probe.empty()) {
    result.round_probe.resize(result.round_iters.size(), std::numeric_limits<double>::quiet_NaN());
    result.round_probe.push_back(round.probe);
  }
  result.round_iters.push_back(round.iters);
}

RoundTimes empty_round(const CaseResult& result, int iters) {
  const size_t ranks = static_cast<size_t>(result.ranks());
  const size_t per_iter = ranks * static_cast<size_t>(result.max_tasks);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  RoundTimes round;
  round.iters = iters;
  round.step_seconds.assign(static_cast<size_t>(iters) * ranks, nan);
  round.task_start.assign(static_cast<size_t>(iters) * per_iter, nan);
  round.task_end.assign(static_cast<size_t>(iters) * per_iter, nan);
  round.launch_seconds.assign(static_cast<size_t>(iters) * ranks, nan);
  return round;
}

bool CaseResult::arrays_match() const {
  if (!stored_fits()) return false;
  const size_t w = static_cast<size_t>(std::max(ranks(), 0));
  const size_t t = static_cast<size_t>(std::max(max_tasks, 0));
  const size_t i = static_cast<size_t>(std::max(iters, 0));
  return tasks.size() == w * t && task_start.size() == i * w * t &&
         task_end.size() == task_start.size();
}

std::vector<int32_t> CaseResult::rounds() const {
  if (!round_iters.empty() || iters <= 0) return round_iters;
  return {iters};
}

int CaseResult::timed_iters() const {
  const size_t per_iter = static_cast<size_t>(ranks()) * static_cast<size_t>(max_tasks);
  if (per_iter == 0) return 0;
  return static_cast<int>(std::min(task_start.size(), task_end.size()) / per_iter);
}

double CaseResult::step(int iter) const {
  const int n = ranks();
  if (iter < 0 || iter >= iters || n <= 0 ||
      step_seconds.size() < static_cast<size_t>(iters) * static_cast<size_t>(n)) {
    throw std::out_of_range("case " + id + ": no step " + std::to_string(iter));
  }
  const double* row = step_seconds.data() + static_cast<size_t>(iter) * n;
  double slowest = row[0];
  // NaN must win: a rank without a time means the step's time is unknown, not its peers' max.
  // The ranks not stored ran as stored ones did: they change no maximum.
  for (int r = 1; r < n; ++r) {
    if (std::isnan(row[r]) || row[r] > slowest) slowest = row[r];
    if (std::isnan(slowest)) break;
  }
  return slowest;
}

}  // namespace fob
