// Chrome trace event format, JSON object form. Perfetto and chrome://tracing read it; the text
// is built directly (no DOM) because a long case has hundreds of thousands of events.
//
// Times in the file are relative to each iteration's start, so the trace lays iterations (and
// cases) end to end: iteration i begins where iteration i-1's step (its slowest rank) ended,
// plus a gap that keeps neighbouring iterations apart in the viewer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "fob/plan.h"
#include "fob/trace.h"

#include "core/json_text.h"
#include "fob/types.h"

namespace fob {
namespace {

// Integer nanoseconds on the trace's axis: a task's start, end and flow points are rounded
// once, so a flow's timestamp lies exactly within the slice it binds to.
using Nanos = int64_t;

Nanos to_nanos(double seconds) {
  return std::llround(seconds * 1e9);
}

// Microseconds with three decimals, from nanoseconds, without floating-point rounding.
std::string micros(Nanos ns) {
  char buf[40];
  const char* sign = ns < 0 ? "-" : "";
  const int64_t a = ns < 0 ? -ns : ns;
  std::snprintf(buf, sizeof buf, "%s%lld.%03lld", sign, static_cast<long long>(a / 1000),
                static_cast<long long>(a % 1000));
  return buf;
}

const char* kind_name(int8_t kind) {
  if (kind < 0 || kind >= kNumTaskKinds) return "unknown";
  return to_string(static_cast<TaskKind>(kind));
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= s.size()) {
    const size_t comma = std::min(s.find(',', from), s.size());
    out.push_back(s.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

// How long iteration i lasts on the axis: its step time, or, where a rank has no step time,
// the latest task end of any rank.
Nanos iteration_span(const CaseResult& c, int iter) {
  double span = std::nan("");
  if (c.ranks() > 0 && c.step_seconds.size() >= static_cast<size_t>(c.iters) * c.ranks()) {
    span = c.step(iter);
  }
  if (!std::isfinite(span)) {
    span = 0;
    for (int r = 0; r < c.ranks(); ++r) {
      for (int t = 0; t < c.max_tasks; ++t) {
        const double end = c.end(iter, r, t);
        if (std::isfinite(end)) span = std::max(span, end);
      }
    }
  }
  return std::max<Nanos>(to_nanos(span), 0);
}

// A gap of 2% of the case's longest iteration (at least 1 us) separates iterations visibly
// without distorting the axis.
Nanos iteration_gap(const CaseResult& c, const std::vector<int>& iters) {
  Nanos longest = 0;
  for (const int i : iters) longest = std::max(longest, iteration_span(c, i));
  return std::max<Nanos>(longest / 50, 1000);
}

class TraceWriter {
 public:
  TraceWriter(std::ostream& out, const ResultFile& file) : out_(out), file_(file) {}

  void begin() {
    out_ << "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{";
    const SystemInfo& s = file_.system;
    const RunInfo& r = file_.run;
    const std::pair<const char*, std::string> fields[] = {
        {"generator", "fobench"},
        {"backend", s.backend},
        {"transport", s.transport},
        // The transport with its copy engines and transfer SMs where known, else the name.
        {"transport_detail", transport_text(file_)},
        {"world_size", std::to_string(s.world_size)},
        {"hostnames", s.hostnames},
        {"devices", s.devices},
        {"mpi_version", s.mpi_version},
        {"nccl_version", s.nccl_version},
        {"cuda_version", s.cuda_version},
        {"blas", s.blas},
        {"link_emulation", s.link_emulation},
        {"timer", s.timer},
        {"notes", s.notes},
        {"git_commit", r.git_commit},
        {"created_utc", r.created_utc},
        {"command_line", r.command_line}};
    bool first = true;
    for (const auto& [key, value] : fields) {
      out_ << (first ? "" : ",") << json_string(key) << ":" << json_string(value);
      first = false;
    }
    out_ << "},\n\"traceEvents\":[";
  }

  void end() { out_ << "\n]}\n"; }

  // Names every rank's process ("rank R (host)") and its two stream threads, in rank order.
  void metadata(int world) {
    const std::vector<std::string> hosts = split_commas(file_.system.hostnames);
    for (int r = 0; r < world; ++r) {
      const std::string host = r < static_cast<int>(hosts.size()) ? hosts[r] : "?";
      const std::string pid = std::to_string(r);
      event("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid +
            ",\"tid\":0,\"args\":{\"name\":" + json_string("rank " + pid + " (" + host + ")") +
            "}}");
      event("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid +
            ",\"tid\":0,\"args\":{\"sort_index\":" + pid + "}}");
      for (int tid = 0; tid < kNumStreams; ++tid) {
        const std::string t = std::to_string(tid);
        event("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + t +
              ",\"args\":{\"name\":" + json_string(to_string(static_cast<StreamId>(tid))) + "}}");
        event("{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + pid + ",\"tid\":" + t +
              ",\"args\":{\"sort_index\":" + t + "}}");
      }
    }
  }

  // Writes the given iterations of one case from `origin` on; returns where the case ends.
  Nanos write_case(const CaseResult& c, const std::vector<int>& iters, Nanos origin) {
    const Nanos gap = iteration_gap(c, iters);
    // A global instant marks where each case begins, so cases are told apart in the viewer.
    event("{\"ph\":\"i\",\"s\":\"g\",\"name\":" + json_string("case " + c.id + ": " + c.strategy) +
          ",\"cat\":\"case\",\"pid\":0," + "\"tid\":0,\"ts\":" + micros(origin) + "}");
    Nanos at = origin;
    for (const int i : iters) {
      write_iteration(c, i, at);
      at += iteration_span(c, i) + gap;
    }
    return at;
  }

 private:
  void event(const std::string& text) {
    out_ << (first_event_ ? "\n" : ",\n") << text;
    first_event_ = false;
  }

  void write_iteration(const CaseResult& c, int iter, Nanos origin) {
    // A simulated case that stores one period of its ring (CaseResult::stored) shows that
    // period: the other ranks ran exactly as those did.
    const size_t per_iter = static_cast<size_t>(c.ranks()) * c.max_tasks;
    // rt: a row of c.tasks; the iteration's times lie at the same rows from `base` on.
    const size_t base = c.timing_index(iter, 0, 0);
    auto timed = [&](size_t rt, Nanos& start, Nanos& end) {
      const double s = c.task_start[base + rt];
      const double e = c.task_end[base + rt];
      if (!std::isfinite(s) || !std::isfinite(e)) return false;
      start = origin + to_nanos(s);
      end = std::max(start, origin + to_nanos(e));
      return true;
    };
    const std::string common = ",\"args\":{\"case\":" + json_string(c.id) +
                               ",\"strategy\":" + json_string(c.strategy) +
                               ",\"iteration\":" + std::to_string(iter);
    for (size_t rt = 0; rt < per_iter; ++rt) {
      const TaskRecord& t = c.tasks[rt];
      Nanos start = 0, end = 0;
      if (t.task < 0 || !timed(rt, start, end)) continue;
      event("{\"ph\":\"X\",\"name\":" + json_string(t.label) +
            ",\"cat\":" + json_string(kind_name(t.kind)) + ",\"pid\":" + std::to_string(t.rank) +
            ",\"tid\":" + std::to_string(t.stream) + ",\"ts\":" + micros(start) +
            ",\"dur\":" + micros(end - start) + common + ",\"task\":" + std::to_string(t.task) +
            ",\"bytes\":" + std::to_string(t.bytes) + ",\"flops\":" + json_number(t.flops) +
            ",\"peer\":" + std::to_string(t.peer) + "}}");
    }
    for (const DepRecord& d : c.deps) {
      if (d.rank < 0 || d.rank >= c.ranks() || d.task < 0 || d.task >= c.max_tasks || d.on < 0 ||
          d.on >= c.max_tasks) {
        continue;
      }
      const size_t row = c.task_index(d.rank, 0);
      const TaskRecord& from = c.tasks[row + d.on];
      const TaskRecord& to = c.tasks[row + d.task];
      Nanos from_start = 0, from_end = 0, to_start = 0, to_end = 0;
      if (from.task < 0 || to.task < 0 || !timed(row + d.on, from_start, from_end) ||
          !timed(row + d.task, to_start, to_end)) {
        continue;
      }
      // A flow start binds to the slice enclosing its timestamp; a slice's end instant may
      // already count as outside it, so the arrow leaves from the last nanosecond inside.
      const Nanos leave = from_end - from_start >= 2 ? from_end - 1 : from_start;
      const std::string id = std::to_string(next_flow_id_++);
      const std::string pid = std::to_string(d.rank);
      event("{\"ph\":\"s\",\"name\":\"dep\",\"cat\":\"dep\",\"id\":" + id + ",\"pid\":" + pid +
            ",\"tid\":" + std::to_string(from.stream) + ",\"ts\":" + micros(leave) + "}");
      // bp "e": bind to the slice that encloses the timestamp (the dependent task, which
      // starts there) rather than the next slice to begin after it.
      event("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"dep\",\"cat\":\"dep\",\"id\":" + id +
            ",\"pid\":" + pid + ",\"tid\":" + std::to_string(to.stream) +
            ",\"ts\":" + micros(to_start) + "}");
    }
  }

  std::ostream& out_;
  const ResultFile& file_;
  bool first_event_ = true;
  int64_t next_flow_id_ = 1;
};

}  // namespace

void write_trace_json(std::ostream& out, const ResultFile& file, const std::string& case_id,
                      int iter) {
  // Everything is checked before the first byte is written.
  std::vector<const CaseResult*> cases;
  if (case_id.empty()) {
    for (const CaseResult& c : file.cases) cases.push_back(&c);
  } else {
    cases.push_back(&select_case(file, case_id, "--case"));
  }
  if (cases.empty()) throw InputError("the file has no cases to trace");
  for (const CaseResult* c : cases) {
    if (!c->arrays_match()) {
      throw InputError("case " + c->id + ": its task arrays do not match its world (" +
                       std::to_string(c->world) + "), iters and task count");
    }
    if (iter < -1 || (iter >= 0 && iter >= c->iters)) {
      throw InputError("--iter " + std::to_string(iter) + " is out of range: case " + c->id +
                       " has " + std::to_string(c->iters) + " timed iterations (valid: 0.." +
                       std::to_string(c->iters - 1) + ", or leave --iter out for all)");
    }
  }

  int world = 0;
  for (const CaseResult* c : cases) world = std::max(world, c->ranks());
  TraceWriter writer(out, file);
  writer.begin();
  writer.metadata(world);
  Nanos at = 0;
  for (const CaseResult* c : cases) {
    std::vector<int> iters;
    if (iter >= 0) {
      iters.push_back(iter);
    } else {
      for (int i = 0; i < c->iters; ++i) iters.push_back(i);
    }
    // Cases are separated by a longer gap than iterations are.
    at = writer.write_case(*c, iters, at) + 4 * iteration_gap(*c, iters);
  }
  writer.end();
}

}  // namespace fob
