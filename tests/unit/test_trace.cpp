// The Chrome trace (JSON) of a synthetic results file: valid JSON, one complete event per timed
// task and iteration, flows paired, iterations laid end to end, bad --case/--iter refused.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/plan.h"
#include "fob/results.h"
#include "fob/trace.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Just enough of a JSON parser to say whether text is one well-formed value.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : s_(text) {}
  bool valid() {
    skip();
    if (!value()) return false;
    skip();
    return i_ == s_.size();
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool string() {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        if (e == 'u') {
          for (int k = 0; k < 4; ++k) {
            if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_++]))) {
              return false;
            }
          }
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool number() {
    const size_t from = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
    }
    return i_ > from && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }
  bool literal(const std::string& word) {
    if (s_.compare(i_, word.size(), word) != 0) return false;
    i_ += word.size();
    return true;
  }
  bool value() {
    skip();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
  bool object() {
    eat('{');
    if (eat('}')) return true;
    do {
      skip();
      if (!string() || !eat(':') || !value()) return false;
    } while (eat(','));
    return eat('}');
  }
  bool array() {
    eat('[');
    if (eat(']')) return true;
    do {
      if (!value()) return false;
    } while (eat(','));
    return eat(']');
  }

  const std::string& s_;
  size_t i_ = 0;
};

// The events are written one per line, so a field is found by its key on the line.
std::string field(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return "";
  size_t from = at + k.size();
  size_t to = from;
  if (line[from] == '"') {
    to = line.find('"', from + 1) + 1;
  } else {
    while (to < line.size() && line[to] != ',' && line[to] != '}') ++to;
  }
  return line.substr(from, to - from);
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

TaskRecord task(int rank, int id, StreamId stream, TaskKind kind, int peer,
                const std::string& label) {
  return TaskRecord{rank,
                    id,
                    static_cast<int8_t>(stream),
                    static_cast<int8_t>(kind),
                    peer,
                    peer >= 0 ? 4096 : 0,
                    peer >= 0 ? 0.0 : 2e6,
                    label};
}

// Two ranks, three iterations. Each rank: gemm (compute), send (comm), gemm waiting for both;
// rank 1 also has a padding row, and in iteration 2 its send was never timed.
CaseResult make_case(const std::string& id, const std::string& strategy) {
  CaseResult c = case_result({.id = id, .strategy = strategy, .world = 2, .iters = 3});
  c.max_tasks = 4;
  for (int r = 0; r < 2; ++r) {
    c.tasks.push_back(task(r, 0, StreamId::compute, TaskKind::gemm, -1, "gemm \"step\" 0"));
    c.tasks.push_back(task(r, 1, StreamId::comm, TaskKind::send, 1 - r, "send\\to\tnext"));
    c.tasks.push_back(task(r, 2, StreamId::compute, TaskKind::gemm, -1, "gemm step 1"));
    if (r == 0) {
      c.tasks.push_back(task(r, 3, StreamId::compute, TaskKind::add, -1, "add"));
      c.deps.push_back(DepRecord{r, 3, 2});
    } else {
      c.tasks.push_back(TaskRecord{1, -1, 0, 0, -1, 0, 0, ""});
    }
    c.deps.push_back(DepRecord{r, 2, 0});
    c.deps.push_back(DepRecord{r, 2, 1});
  }
  for (int i = 0; i < c.iters; ++i) {
    const double slow = 1e-3 * (1 + i);  // iterations of 4, 5 and 6 ms on rank 1
    for (int r = 0; r < 2; ++r) {
      const double g = r == 0 ? 1e-3 : slow;
      const bool lost = r == 1 && i == 2;
      c.task_start.insert(c.task_start.end(), {0.0, lost ? kNaN : 0.0, 3e-3, r == 0 ? 4e-3 : kNaN});
      c.task_end.insert(c.task_end.end(),
                        {g, lost ? kNaN : 2e-3, 3e-3 + g, r == 0 ? 4.5e-3 : kNaN});
      c.step_seconds.push_back(r == 0 ? 4.5e-3 : 3e-3 + g);
    }
  }
  return c;
}

ResultFile make_file() {
  ResultFile f;
  f.run.git_commit = "abc1234";
  f.system.backend = "cpu";
  f.system.transport = "mpi";
  f.system.world_size = 2;
  f.system.hostnames = "node\"a,node-b";
  f.system.link_emulation = "emulated: 10 Gbit/s, 5 us latency";
  f.cases = {make_case("0000", "baseline"), make_case("0001", "flash")};
  return f;
}

std::string trace(const ResultFile& f, const std::string& case_id = "", int iter = -1) {
  std::ostringstream out;
  write_trace_json(out, f, case_id, iter);
  return out.str();
}

// Timed real tasks per iteration of make_case: rank 0 has 4, rank 1 has 3 (2 in iteration 2).
constexpr int kTasksPerCase = 4 + 3 + 4 + 3 + 4 + 2;
// Timed deps: rank 0's 3 in every iteration; rank 1's 2, but only 1 in iteration 2.
constexpr int kFlowsPerCase = 3 * 3 + 2 + 2 + 1;

TEST(Trace, IsValidJsonWithOneCompleteEventPerTimedTask) {
  const std::string text = trace(make_file());
  EXPECT_TRUE(JsonChecker(text).valid()) << text.substr(0, 2000);
  EXPECT_EQ(lines_with(text, "\"ph\":\"X\"").size(), 2u * kTasksPerCase);
  EXPECT_NE(text.find("\"traceEvents\":["), std::string::npos);
  EXPECT_NE(text.find("\"displayTimeUnit\":\"ms\""), std::string::npos);
  EXPECT_NE(text.find("\"link_emulation\":\"emulated: 10 Gbit/s, 5 us latency\""),
            std::string::npos);
  // Labels and host names are escaped.
  EXPECT_NE(text.find("\"name\":\"gemm \\\"step\\\" 0\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"send\\\\to\\tnext\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"rank 0 (node\\\"a)\""), std::string::npos);
}

TEST(Trace, ProcessPerRankThreadPerStream) {
  const std::string text = trace(make_file());
  const auto names = lines_with(text, "\"name\":\"thread_name\"");
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(lines_with(text, "\"name\":\"process_name\"").size(), 2u);
  EXPECT_NE(text.find("\"name\":\"rank 1 (node-b)\""), std::string::npos);
  for (const std::string& line : lines_with(text, "\"ph\":\"X\"")) {
    const std::string pid = field(line, "pid"), tid = field(line, "tid");
    EXPECT_TRUE(pid == "0" || pid == "1") << line;
    const std::string cat = field(line, "cat");
    // The comm thread holds the sends, the compute thread the rest.
    EXPECT_EQ(tid, cat == "\"send\"" ? "1" : "0") << line;
  }
}

TEST(Trace, FlowsArePairedOnTheirLanes) {
  const std::string text = trace(make_file());
  std::map<std::string, std::string> starts, finishes;
  for (const std::string& line : lines_with(text, "\"ph\":\"s\"")) {
    EXPECT_EQ(field(line, "cat"), "\"dep\"");
    EXPECT_TRUE(starts.emplace(field(line, "id"), line).second) << "duplicate id: " << line;
  }
  for (const std::string& line : lines_with(text, "\"ph\":\"f\"")) {
    EXPECT_EQ(field(line, "bp"), "\"e\"");
    EXPECT_TRUE(finishes.emplace(field(line, "id"), line).second) << "duplicate id: " << line;
  }
  EXPECT_EQ(starts.size(), 2u * kFlowsPerCase);
  ASSERT_EQ(starts.size(), finishes.size());
  for (const auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id)) << id;
    const std::string& f = finishes.at(id);
    EXPECT_EQ(field(s, "pid"), field(f, "pid"));
    EXPECT_LE(std::stod(field(s, "ts")), std::stod(field(f, "ts")));
  }
}

TEST(Trace, IterationsFollowOneAnother) {
  const ResultFile f = make_file();
  const std::string text = trace(f, "0000");
  // Each iteration's first task starts after the previous iteration's step has ended.
  std::vector<double> first_gemm;
  for (const std::string& line : lines_with(text, "\"ph\":\"X\"")) {
    if (field(line, "pid") == "0" && field(line, "task") == "0") {
      first_gemm.push_back(std::stod(field(line, "ts")));
    }
  }
  ASSERT_EQ(first_gemm.size(), 3u);
  EXPECT_EQ(first_gemm[0], 0.0);
  EXPECT_GE(first_gemm[1], f.cases[0].step(0) * 1e6);
  EXPECT_GE(first_gemm[2] - first_gemm[1], f.cases[0].step(1) * 1e6);
  // Only the chosen case is written.
  EXPECT_EQ(lines_with(text, "\"ph\":\"X\"").size(), static_cast<size_t>(kTasksPerCase));
  EXPECT_TRUE(lines_with(text, "\"case\":\"0001\"").empty());
}

TEST(Trace, OneIterationOfEveryCase) {
  const std::string text = trace(make_file(), "", 1);
  EXPECT_TRUE(JsonChecker(text).valid());
  EXPECT_EQ(lines_with(text, "\"ph\":\"X\"").size(), 2u * 7);
  EXPECT_EQ(lines_with(text, "\"ph\":\"s\"").size(), 2u * 5);
  for (const std::string& line : lines_with(text, "\"ph\":\"X\"")) {
    EXPECT_EQ(field(line, "iteration"), "1");
  }
}

TEST(Trace, BadCaseOrIterationIsInputErrorNamingTheChoices) {
  const ResultFile f = make_file();
  try {
    trace(f, "0042");
    FAIL() << "no error for an absent case";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("0042"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0000 (baseline), 0001 (flash)"), std::string::npos)
        << e.what();
  }
  try {
    trace(f, "0001", 3);
    FAIL() << "no error for an absent iteration";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--iter 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0..2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(trace(f, "", -2), InputError);
}

}  // namespace
}  // namespace fob
