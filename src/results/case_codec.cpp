#include "case_codec.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "fob/moe_keys.h"
#include "fob/moe_load.h"
#include "fob/plan.h"
#include "fob/types.h"

namespace fob::codec {

static_assert(std::endian::native == std::endian::little,
              "the journal and the reader's messages are little-endian images");

namespace {

// Bounds beyond any real run (and well inside the integer types): a field past them is damage
// or a crafted file, refused before a product of them could wrap.
constexpr int64_t kMaxWorld = 1 << 20;
constexpr int64_t kMaxIters = 1 << 30;
constexpr int64_t kMaxTasks = 1 << 24;
constexpr size_t kMaxIdChars = 64;

}  // namespace

void Encoder::raw(const void* p, size_t n) {
  out_.append(static_cast<const char*>(p), n);
}

void Encoder::str(const std::string& s) {
  u64(s.size());
  out_.append(s);
}

void Decoder::fail(const std::string& what) const {
  throw InputError(where_ + ": " + what + " (at byte " + std::to_string(at_) + ")");
}

void Decoder::take(void* p, size_t n) {
  if (n > left()) fail("ends " + std::to_string(n - left()) + " byte(s) early");
  std::memcpy(p, in_.data() + at_, n);
  at_ += n;
}

size_t Decoder::count(size_t elem, const char* what) {
  const uint64_t n = u64();
  if (elem > 0 && n > left() / elem) {
    fail(std::string(what) + " claims " + std::to_string(n) + " elements, more than the " +
         std::to_string(left()) + " bytes left can hold");
  }
  return static_cast<size_t>(n);
}

std::string Decoder::str() {
  std::string s(count(1, "a string"), '\0');
  if (!s.empty()) take(s.data(), s.size());
  return s;
}

std::string Decoder::text(h5io::Text kind) {
  std::string s = str();
  const size_t most = kind == h5io::Text::line ? h5io::kLineBytes : h5io::kTextBytes;
  if (s.size() > most) {
    fail("a string of " + std::to_string(s.size()) + " bytes where at most " +
         std::to_string(most) + " belong");
  }
  return h5io::clean_text(s, kind);
}

void put_lines(Encoder& e, const std::vector<std::string>& lines) {
  e.u64(lines.size());
  for (const std::string& line : lines) e.str(line);
}

std::vector<std::string> get_lines(Decoder& d, const char* what) {
  std::vector<std::string> lines(d.count(sizeof(uint64_t), what));
  for (std::string& line : lines) line = d.text(h5io::Text::line);
  return lines;
}

void put_run(Encoder& e, const RunInfo& run) {
  e.str(run.git_commit);
  e.str(run.created_utc);
  e.str(run.command_line);
  e.str(run.config_yaml);
  e.u8(run.tuned ? 1 : 0);
  e.str(run.run_id);
}

RunInfo get_run(Decoder& d) {
  RunInfo run;
  run.git_commit = d.text(h5io::Text::line);
  run.created_utc = d.text(h5io::Text::line);
  run.command_line = d.text(h5io::Text::lines);
  run.config_yaml = d.text(h5io::Text::lines);
  run.tuned = d.u8() != 0;
  run.run_id = d.text(h5io::Text::line);
  return run;
}

namespace {

// SystemInfo's text fields, in one order for both directions.
template <typename Sys>
auto system_texts(Sys& s) {
  return std::array{&s.backend,        &s.transport,    &s.hostnames,       &s.devices,
                    &s.mpi_version,    &s.nccl_version, &s.cuda_version,    &s.blas,
                    &s.link_emulation, &s.timer,        &s.timer_requested, &s.env,
                    &s.notes,          &s.simulated,    &s.hardware};
}

}  // namespace

void put_system(Encoder& e, const SystemInfo& sys) {
  e.i32(sys.world_size);
  e.i32(sys.copy_engines);
  for (const std::string* s : system_texts(sys)) e.str(*s);
}

SystemInfo get_system(Decoder& d) {
  SystemInfo sys;
  sys.world_size = d.i32();
  sys.copy_engines = d.i32();
  if (sys.copy_engines < -1 || sys.copy_engines > kMaxDeviceUnits) {
    d.fail("copy_engines " + std::to_string(sys.copy_engines) + ", outside -1.." +
           std::to_string(kMaxDeviceUnits));
  }
  for (std::string* s : system_texts(sys)) {
    const bool long_text =
        s == &sys.env || s == &sys.notes || s == &sys.simulated || s == &sys.hardware;
    const bool per_rank = s == &sys.hostnames || s == &sys.devices;
    *s = d.text(long_text ? h5io::Text::lines : per_rank ? h5io::Text::list : h5io::Text::line);
  }
  return sys;
}

namespace {

void put_key(Encoder& e, const CaseKey& k) {
  e.str(k.workload);
  e.str(k.strategy);
  for (int64_t v : {k.batch, k.seq, k.hidden, k.ffn, k.heads, k.experts, k.top_k, k.expert_ffn}) {
    e.i64(v);
  }
  e.f64(k.moe_skew);
  e.f64(k.capacity_factor);
  e.i64(k.moe_seed);
  e.str(k.dtype);
  e.i32(k.world);
}

void get_key(Decoder& d, CaseKey& k) {
  k.workload = d.text(h5io::Text::line);
  k.strategy = d.text(h5io::Text::line);
  for (int64_t* v :
       {&k.batch, &k.seq, &k.hidden, &k.ffn, &k.heads, &k.experts, &k.top_k, &k.expert_ffn}) {
    *v = d.i64();
  }
  k.moe_skew = d.f64();
  k.capacity_factor = d.f64();
  k.moe_seed = d.i64();
  if (const std::string problem = recorded_moe_problem(k.moe()); !problem.empty()) {
    d.fail("a case of " + problem);
  }
  k.dtype = d.text(h5io::Text::line);
  k.world = d.i32();
}

void put_task(Encoder& e, const TaskRecord& t) {
  e.i32(t.rank);
  e.i32(t.task);
  e.u8(static_cast<uint8_t>(t.stream));
  e.u8(static_cast<uint8_t>(t.kind));
  e.i32(t.peer);
  e.i64(t.bytes);
  e.f64(t.flops);
  e.str(std::string(t.label));
}

constexpr size_t kTaskBytesAtLeast = 4 + 4 + 1 + 1 + 4 + 8 + 8 + 8;

TaskRecord get_task(Decoder& d) {
  TaskRecord t;
  t.rank = d.i32();
  t.task = d.i32();
  t.stream = static_cast<int8_t>(d.u8());
  t.kind = static_cast<int8_t>(d.u8());
  t.peer = d.i32();
  t.bytes = d.i64();
  t.flops = d.f64();
  const std::string label = d.text(h5io::Text::line);
  if (label.size() > TaskLabel::kLabelChars) d.fail("a task label longer than its 63 characters");
  t.label = TaskLabel(label);
  return t;
}

}  // namespace

void put_case(Encoder& e, const CaseResult& c) {
  put_key(e, c.key());
  e.str(c.id);
  for (int32_t v : {c.iters, c.warmup, c.verified, c.stored, c.max_tasks, c.transfer_sms}) {
    e.i32(v);
  }
  e.f64(c.max_abs_err);
  e.str(c.auto_slices);
  e.array(c.round_iters);
  e.u64(c.tasks.size());
  for (const TaskRecord& t : c.tasks) put_task(e, t);
  e.u64(c.deps.size());
  for (const DepRecord& dep : c.deps) {
    for (int32_t v : {dep.rank, dep.task, dep.on}) e.i32(v);
  }
  e.array(c.step_seconds);
  e.array(c.task_start);
  e.array(c.task_end);
  put_lines(e, c.timers);
  e.array(c.iteration_timer);
  e.array(c.launch_seconds);
  put_lines(e, c.facts);
  e.array(c.round_probe);
  const MoeLoad& m = c.moe_load;
  for (const auto* v : {&m.dispatch_bytes, &m.combine_bytes, &m.expert_tokens, &m.rank_tokens,
                        &m.dropped, &m.token_matrix}) {
    e.array(*v);
  }
}

CaseResult get_case(Decoder& d, bool with_moe_load) {
  CaseResult c;
  get_key(d, c);
  c.id = d.text(h5io::Text::line);
  for (int32_t* v : {&c.iters, &c.warmup, &c.verified, &c.stored, &c.max_tasks, &c.transfer_sms}) {
    *v = d.i32();
  }
  c.max_abs_err = d.f64();
  c.auto_slices = d.text(h5io::Text::lines);
  c.round_iters = d.array<int32_t>("round_iters");
  c.tasks.resize(d.count(kTaskBytesAtLeast, "tasks"));
  for (TaskRecord& t : c.tasks) t = get_task(d);
  c.deps.resize(d.count(3 * sizeof(int32_t), "deps"));
  for (DepRecord& dep : c.deps) {
    for (int32_t* v : {&dep.rank, &dep.task, &dep.on}) *v = d.i32();
  }
  c.step_seconds = d.array<double>("step_seconds");
  c.task_start = d.array<double>("task_start");
  c.task_end = d.array<double>("task_end");
  c.timers = get_lines(d, "timers");
  c.iteration_timer = d.array<int8_t>("iteration_timer");
  c.launch_seconds = d.array<double>("launch_seconds");
  c.facts = get_lines(d, "facts");
  c.round_probe = d.array<double>("round_probe");
  if (with_moe_load) {
    MoeLoad& m = c.moe_load;
    m.dispatch_bytes = d.array<int64_t>("moe dispatch_bytes");
    m.combine_bytes = d.array<int64_t>("moe combine_bytes");
    m.expert_tokens = d.array<int64_t>("moe expert_tokens");
    m.rank_tokens = d.array<int64_t>("moe rank_tokens");
    m.dropped = d.array<int64_t>("moe dropped");
    m.token_matrix = d.array<int64_t>("moe token_matrix");
  }
  check_case(c, d);
  return c;
}

namespace {

// Whether the arrays have the sizes the case's world, iters and max_tasks say (the world, and
// so the ranks stored, checked to be at least 1 first).
bool arrays_sized(const CaseResult& c) {
  const size_t ranks = static_cast<size_t>(c.ranks());
  const size_t per_iter = ranks * static_cast<size_t>(c.max_tasks);  // < 2^44: no wrap
  const size_t iters = static_cast<size_t>(c.iters);
  if (c.tasks.size() != per_iter || c.task_start.size() != c.task_end.size()) return false;
  if (c.step_seconds.size() % ranks != 0 || c.step_seconds.size() / ranks != iters) return false;
  if (per_iter == 0) return c.task_start.empty();
  return c.task_start.size() % per_iter == 0 && c.task_start.size() / per_iter == iters;
}

void check_rounds(const CaseResult& c, const Decoder& d, const std::string& name) {
  int64_t sum = 0;
  for (int32_t n : c.round_iters) {
    if (n < 0) d.fail(name + " has a round of negative length");
    sum += n;
  }
  if (!c.round_iters.empty() && sum != c.iters) {
    d.fail(name + " has rounds of " + std::to_string(sum) + " iterations, not its " +
           std::to_string(c.iters));
  }
}

void check_id(const CaseResult& c, const Decoder& d) {
  if (c.id.empty() || c.id.size() > kMaxIdChars || c.id.find('/') != std::string::npos ||
      c.id == "." || c.id == "..") {
    d.fail("a case id that cannot name a case");
  }
}

void check_counts(const CaseResult& c, const Decoder& d, const std::string& name) {
  auto within = [&](const char* what, int64_t v, int64_t most) {
    if (v < 0 || v > most) {
      d.fail(name + " has " + what + " " + std::to_string(v) + ", outside 0.." +
             std::to_string(most));
    }
  };
  within("world", c.world, kMaxWorld);
  if (c.world < 1) d.fail(name + " has no ranks");
  within("iters", c.iters, kMaxIters);
  within("max_tasks", c.max_tasks, kMaxTasks);
  within("stored_ranks", c.stored, kMaxWorld);
  if (!c.stored_fits()) d.fail(name + " has stored_ranks that do not divide its world");
  if (c.transfer_sms != -1) within("transfer_sms", c.transfer_sms, kMaxDeviceUnits);
}

void check_probes(const CaseResult& c, const Decoder& d, const std::string& name) {
  if (!c.round_probe.empty() && c.round_probe.size() != c.rounds().size()) {
    d.fail(name + "'s speed probes do not match its rounds");
  }
  for (const double p : c.round_probe) {
    if (!std::isnan(p) && !(p > 0 && std::isfinite(p))) {
      d.fail(name + " has a speed probe that is not a positive time");
    }
  }
}

void check_task_kinds(const CaseResult& c, const Decoder& d, const std::string& name) {
  for (const TaskRecord& t : c.tasks) {
    if (t.stream < 0 || t.stream >= kNumStreams || t.kind < 0 || t.kind >= kNumTaskKinds) {
      d.fail(name + " has a task of an unknown stream or kind");
    }
  }
}

}  // namespace

void check_case(const CaseResult& c, const Decoder& d) {
  const std::string name = "case '" + c.id.substr(0, kMaxIdChars) + "'";
  check_id(c, d);
  check_counts(c, d, name);
  if (!arrays_sized(c)) {
    d.fail(name + "'s arrays do not have the sizes its world, iters and max_tasks say");
  }
  check_rounds(c, d, name);
  if (!c.timers_match()) d.fail(name + "'s iteration timers do not match its iterations");
  if (!c.launches_match()) d.fail(name + "'s launch times do not match its iterations");
  check_probes(c, d, name);
  check_task_kinds(c, d, name);
  if (const std::string why = moe_load_problem(c.moe_load, c.key()); !why.empty()) {
    d.fail(name + "'s MoE load: " + why);
  }
}

std::string encode_file(const ResultFile& file) {
  Encoder e;
  put_run(e, file.run);
  put_system(e, file.system);
  e.u64(file.cases.size());
  for (const CaseResult& c : file.cases) put_case(e, c);
  return std::move(e.bytes());
}

ResultFile decode_file(std::string_view bytes, const std::string& where) {
  Decoder d(bytes, where);
  ResultFile file;
  file.run = get_run(d);
  file.system = get_system(d);
  file.cases.resize(d.count(1, "cases"));
  for (CaseResult& c : file.cases) c = get_case(d);
  if (d.left() != 0) d.fail(std::to_string(d.left()) + " byte(s) after the last case");
  return file;
}

}  // namespace fob::codec
