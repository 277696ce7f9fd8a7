// The SVG pictures: their structure (one element per task, lane, wait, bar, series), that they
// are well-formed XML with labels escaped, and that a bad case or iteration is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../common/case_result_builder.h"
#include "fob/pictures.h"
#include "fob/plan.h"
#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kWorld = 2;
constexpr int kIters = 3;
// Iteration i's times are the pattern's times this many times over: iteration 1 is the median.
constexpr double kIterScale[kIters] = {1.2, 1.0, 0.9};

// One task of a pattern every rank runs, in milliseconds from the iteration's start.
struct Spec {
  StreamId stream;
  TaskKind kind;
  double start, end;
  std::string label;
  std::vector<int> deps;
};

// A case on the shape (mlp 2 x seq x 8 x 32, fp32, N=2) whose ranks all run `pattern`; each
// rank also has one padding row, so the task count is not simply world * max_tasks.
CaseResult make_case(const std::string& id, const std::string& strategy, int64_t seq,
                     const std::vector<Spec>& pattern, double time_scale = 1.0) {
  CaseResult c = case_result({.id = id,
                              .workload = "mlp",
                              .strategy = strategy,
                              .seq = seq,
                              .hidden = 8,
                              .ffn = 32,
                              .world = kWorld,
                              .iters = kIters,
                              .warmup = 1});
  c.max_tasks = static_cast<int32_t>(pattern.size()) + 1;
  for (int r = 0; r < kWorld; ++r) {
    for (size_t t = 0; t < pattern.size(); ++t) {
      const Spec& s = pattern[t];
      const bool transfer = s.stream == StreamId::comm;
      c.tasks.push_back(TaskRecord{r, static_cast<int32_t>(t), static_cast<int8_t>(s.stream),
                                   static_cast<int8_t>(s.kind), transfer ? 1 - r : -1,
                                   transfer ? 4096 : 0, transfer ? 0.0 : 1e6, s.label});
      for (int on : s.deps) c.deps.push_back(DepRecord{r, static_cast<int32_t>(t), on});
    }
    c.tasks.push_back(TaskRecord{r, -1, 0, 0, -1, 0, 0, ""});
  }
  for (int i = 0; i < kIters; ++i) {
    const double scale = kIterScale[i] * time_scale * 1e-3;
    for (int r = 0; r < kWorld; ++r) {
      double last = 0;
      for (const Spec& s : pattern) {
        c.task_start.push_back(s.start * scale);
        c.task_end.push_back(s.end * scale);
        last = std::max(last, s.end * scale);
      }
      c.task_start.push_back(kNaN);
      c.task_end.push_back(kNaN);
      c.step_seconds.push_back(last);
    }
  }
  return c;
}

// The flash-like pattern: the second GEMM waits for the first transfer (1.0 to 1.6 ms), and
// between 1.0 and 1.6 ms the comm stream is busy while compute idles (exposed). The label has
// XML's special characters in it.
std::vector<Spec> flash_pattern() {
  return {{StreamId::compute, TaskKind::gemm, 0.0, 1.0, "gemm <0> & \"first\"", {}},
          {StreamId::comm, TaskKind::exchange, 0.0, 1.5, "exchange 0", {}},
          {StreamId::compute, TaskKind::gemm, 1.6, 2.6, "gemm 1", {1}},
          {StreamId::comm, TaskKind::exchange, 1.5, 2.0, "exchange 1", {0}},
          {StreamId::compute, TaskKind::add, 2.6, 2.8, "add", {3}}};
}

// Blocking: the GEMM waits for the whole all-gather, the reduce-scatter for the GEMM.
std::vector<Spec> baseline_pattern() {
  return {{StreamId::comm, TaskKind::collective, 0.0, 2.0, "all-gather", {}},
          {StreamId::compute, TaskKind::gemm, 2.1, 3.1, "gemm", {0}},
          {StreamId::comm, TaskKind::collective, 3.1, 5.1, "reduce-scatter", {1}}};
}

// Both references and two strategies on two shapes (seq 8 and 16, the second twice as slow).
ResultFile sample_file() {
  ResultFile f;
  f.system.link_emulation = "emulated: 10 Gbit/s, 5 us latency";
  int id = 0;
  auto next_id = [&] {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04d", id++);
    return std::string(buf);
  };
  for (int64_t seq : {8, 16}) {
    const double k = seq == 8 ? 1.0 : 2.0;
    f.cases.push_back(make_case(next_id(), "compute_only", seq,
                                {{StreamId::compute, TaskKind::gemm, 0, 2.5, "gemm", {}}}, k));
    f.cases.push_back(make_case(next_id(), "comm_only", seq,
                                {{StreamId::comm, TaskKind::collective, 0, 4, "ag", {}}}, k));
    f.cases.push_back(make_case(next_id(), "baseline", seq, baseline_pattern(), k));
    f.cases.push_back(make_case(next_id(), "flash", seq, flash_pattern(), k));
  }
  return f;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Not an XML parser: enough to catch an unescaped label or an unclosed element. Returns what
// is wrong, or "" when the tags balance and every '&' starts an entity.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = s.find('<', i)) != std::string::npos) {
    if (s.compare(i, 2, "<?") == 0) {
      i = s.find("?>", i);
      if (i == std::string::npos) return "unterminated <?";
      continue;
    }
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    const std::string tag = s.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside tag: " + tag;
    if (!tag.empty() && tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "mismatched </" + tag + ">";
      open.pop_back();
    } else if (tag.empty() || tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  for (size_t a = s.find('&'); a != std::string::npos; a = s.find('&', a + 1)) {
    bool entity = false;
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
      entity |= s.compare(a, std::string(e).size(), e) == 0;
    }
    if (!entity) return "bare '&' at " + std::to_string(a);
  }
  return "";
}

std::string timeline(const ResultFile& f, const std::string& case_id, int iter) {
  std::ostringstream out;
  write_timeline_svg(out, f, TimelineOptions{case_id, iter});
  return out.str();
}

TEST(PicturesTimeline, OneRectPerRealTaskAndOneLanePerRankAndStream) {
  const ResultFile f = sample_file();
  const std::string svg = timeline(f, "0003", 1);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"task "), 2u * flash_pattern().size());  // padding: no rect
  EXPECT_EQ(count(svg, "class=\"lane\""), 4u);
  EXPECT_NE(svg.find("data-rank=\"1\" data-stream=\"comm\""), std::string::npos);
  EXPECT_NE(svg.find(">rank 0 compute<"), std::string::npos);
  EXPECT_NE(svg.find(">rank 1 comm<"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"task kind-gemm\""), 4u);
  EXPECT_EQ(count(svg, "class=\"task kind-exchange\""), 4u);
  EXPECT_EQ(count(svg, "class=\"task kind-add\""), 2u);
  // Each task rect carries a tooltip with its times.
  EXPECT_NE(svg.find("start 1.6 ms, end 2.6 ms, duration 1 ms"), std::string::npos);
}

TEST(PicturesTimeline, DrawsTheWaitADependencyCausedAndTheExposedCommunication) {
  const std::string svg = timeline(sample_file(), "0003", 1);
  // Only "gemm 1" waited (for exchange 0, past the end of the GEMM before it); exchange 1 and
  // the add depend on tasks that ended before their streams' previous tasks did. The wait
  // ends where exchange 0 did (1.5 ms); the 0.1 ms until the GEMM began had no dependency
  // pending and is idle time of another cause.
  EXPECT_EQ(count(svg, "class=\"wait\""), 2u);  // one per rank
  EXPECT_EQ(count(svg, "class=\"dep\""), 2u);
  EXPECT_NE(svg.find("gemm 1 waited 0.5 ms (1–1.5 ms) for exchange 0"), std::string::npos) << svg;
  EXPECT_NE(svg.find("idle 0.1 ms (1.5–1.6 ms) before gemm 1"), std::string::npos) << svg;
  // Comm busy 0..2 ms, compute busy 0..1 and 1.6..2.8: exposed 1..1.6 on each rank.
  EXPECT_EQ(count(svg, "class=\"exposed\""), 2u);
  EXPECT_NE(svg.find("exposed communication 1–1.6 ms (0.6 ms)"), std::string::npos);
}

TEST(PicturesTimeline, BaselineWaitsOnBothStreams) {
  const std::string svg = timeline(sample_file(), "0002", 0);
  // The GEMM waits from the iteration's start, the reduce-scatter from the all-gather's end.
  EXPECT_EQ(count(svg, "class=\"wait\""), 4u);
  EXPECT_NE(svg.find("gemm waited 2.4 ms (0–2.4 ms) for all-gather"), std::string::npos) << svg;
  EXPECT_NE(svg.find("idle 0.12 ms (2.4–2.52 ms) before gemm"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "class=\"exposed\""), 4u);
}

TEST(PicturesTimeline, DefaultsToFirstStrategyCaseAndMedianIteration) {
  const std::string svg = timeline(sample_file(), "", -1);
  EXPECT_NE(svg.find("Timeline of case 0002: mlp, strategy baseline"), std::string::npos);
  EXPECT_NE(svg.find("iteration 1 of 0..2"), std::string::npos);
  EXPECT_NE(svg.find("step 5.1 ms"), std::string::npos);
}

TEST(PicturesTimeline, EscapesLabelsAndSaysTheLinkWasEmulated) {
  const std::string svg = timeline(sample_file(), "0003", 0);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.find("gemm <0>"), std::string::npos);
  EXPECT_NE(svg.find("gemm &lt;0&gt; &amp; &quot;first&quot;"), std::string::npos);
  EXPECT_NE(svg.find("EMULATED link: 10 Gbit/s, 5 us latency"), std::string::npos);

  ResultFile real = sample_file();
  real.system.link_emulation = "none";
  EXPECT_EQ(timeline(real, "0003", 0).find("EMULATED"), std::string::npos);
}

TEST(PicturesTimeline, RefusesAnUnknownCaseOrIteration) {
  const ResultFile f = sample_file();
  try {
    timeline(f, "9999", -1);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("9999"), std::string::npos) << what;
    EXPECT_NE(what.find("0000 (compute_only), 0001 (comm_only)"), std::string::npos) << what;
  }
  for (int bad : {3, 100, -2}) {
    try {
      timeline(f, "0003", bad);
      FAIL() << "no InputError for iteration " << bad;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::to_string(bad)), std::string::npos) << what;
      EXPECT_NE(what.find("0..2"), std::string::npos) << what;
    }
  }
  EXPECT_THROW(timeline(ResultFile{}, "", -1), InputError);
}

TEST(PicturesBreakdown, OneBarPerCaseButCommOnlyAndATlbLinePerShape) {
  std::ostringstream out;
  write_breakdown_svg(out, sample_file());
  const std::string svg = out.str();
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"bar-group\""), 6u);  // 2 shapes x (compute_only, baseline, flash)
  EXPECT_EQ(count(svg, "class=\"tlb\""), 2u);
  // compute_only is one plain T_comp segment; the others are three segments each.
  EXPECT_EQ(count(svg, "class=\"bar "), 2u * (1 + 3 + 3));
  EXPECT_EQ(svg.find("data-strategy=\"comm_only\""), std::string::npos);
  EXPECT_NE(svg.find("data-case=\"0003\""), std::string::npos);
  // Baseline, seq 8, median iteration: T 5.1 ms, T_comp 2.5 ms, no slicing penalty (its
  // compute stream is busy 1 ms), exposed 2.6 ms.
  EXPECT_NE(svg.find("baseline (case 0002): exposed communication 2.6 ms"), std::string::npos);
  EXPECT_NE(svg.find("T_lb = max(T_comp, T_comm) = 4 ms"), std::string::npos);
  // Concurrency above every bar that has comm tasks (not compute_only's): flash shares 1.4 of
  // its 2 ms of comm time with compute, baseline none.
  EXPECT_EQ(count(svg, "class=\"concurrency\""), 4u);
  EXPECT_EQ(count(svg, ">70%</text>"), 2u);
  EXPECT_EQ(count(svg, ">0%</text>"), 2u);
}

TEST(PicturesSpeedup, OneSeriesPerStrategyAlongTheFieldThatVaries) {
  std::ostringstream out;
  write_speedup_svg(out, sample_file());
  const std::string svg = out.str();
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"series"), 2u);  // baseline and flash
  EXPECT_NE(svg.find("data-strategy=\"flash\""), std::string::npos);
  EXPECT_NE(svg.find("data-strategy=\"baseline\""), std::string::npos);
  EXPECT_NE(svg.find(">seq</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker\""), 4u);
  // 5.1 / 2.8 at both shapes.
  EXPECT_NE(svg.find("flash: speedup 1.82"), std::string::npos);
}

TEST(PicturesSpeedup, SliceCountsOfOneShapeAreTheXAxis) {
  ResultFile f;
  f.cases.push_back(make_case("0000", "baseline", 8, baseline_pattern()));
  f.cases.push_back(make_case("0001", "slicing:2", 8, baseline_pattern(), 0.9));
  f.cases.push_back(make_case("0002", "slicing:4", 8, baseline_pattern(), 0.8));
  f.cases.push_back(make_case("0003", "flash", 8, flash_pattern()));
  f.cases.push_back(make_case("0004", "decompose", 8, baseline_pattern(), 0.95));
  std::ostringstream out;
  write_speedup_svg(out, f);
  const std::string svg = out.str();
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"series"), 4u);  // baseline, slicing, flash, decompose
  EXPECT_NE(svg.find("data-strategy=\"slicing\""), std::string::npos);
  EXPECT_NE(svg.find("strategy parameter"), std::string::npos);
  EXPECT_NE(svg.find("slicing:4: speedup 1.25"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker\""), 5u);
  // No compute_only or comm_only: no T_lb, so no ideal line, but the speedups are drawn.
  EXPECT_EQ(svg.find("class=\"ideal\""), std::string::npos);
}

// A `sim --tune` file holds every parameter at each world: each strategy's line is its fastest
// one there; any other file keeps every strategy it holds. World 4's cases store 2 of their ranks
// (a simulated ring's period), read alike.
TEST(PicturesSpeedup, ATuneFileDrawsEachStrategysFastestParameter) {
  ResultFile f;
  for (int world : {2, 4}) {
    const std::string n = std::to_string(world);
    std::vector<CaseResult> cases = {
        make_case("b" + n, "baseline", 8, baseline_pattern()),
        make_case("f1" + n, "flash:1", 8, flash_pattern()),
        make_case("f2" + n, "flash:2", 8, flash_pattern(), world == 2 ? 0.9 : 1.1)};
    for (CaseResult& c : cases) {
      c.world = world;
      c.stored = world == 4 ? kWorld : 0;
      f.cases.push_back(std::move(c));
    }
  }
  // A sweep the user asked for with both parameters keeps both.
  std::ostringstream plain;
  write_speedup_svg(plain, f);
  EXPECT_EQ(count(plain.str(), "class=\"series"), 3u);  // baseline, flash:1, flash:2
  EXPECT_EQ(count(plain.str(), "class=\"marker\""), 6u);

  f.run.tuned = true;
  std::ostringstream out;
  write_speedup_svg(out, f);
  const std::string svg = out.str();
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"series"), 2u);  // baseline, flash
  EXPECT_NE(svg.find("flash (fastest m)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker\""), 4u);
  EXPECT_EQ(count(svg, "flash:2: speedup"), 1u);  // at world 2
  EXPECT_EQ(count(svg, "flash:1: speedup"), 1u);  // at world 4
  // Each point says which parameter won there, beside it, not only in a tooltip.
  EXPECT_EQ(count(svg, "class=\"tune-note\" data-mark=\"tune-note\" font-size=\"10\">m=2<"), 1u);
  EXPECT_EQ(count(svg, "class=\"tune-note\" data-mark=\"tune-note\" font-size=\"10\">m=1<"), 1u);
  EXPECT_NE(svg.find("data-for=\"tune-note\""), std::string::npos);
  // Its breakdown draws the same choice: baseline and flash's fastest m at each world.
  std::ostringstream bars;
  write_breakdown_svg(bars, f);
  EXPECT_EQ(count(bars.str(), "class=\"bar-group\""), 4u);
  EXPECT_EQ(count(bars.str(), "data-strategy=\"flash:2\""), 1u);
}

TEST(PicturesSpeedup, CommOnlyFilesShowBusBandwidthAlongMessageSize) {
  ResultFile f;
  f.cases.push_back(
      make_case("0000", "comm_only", 8, {{StreamId::comm, TaskKind::collective, 0, 4, "ag", {}}}));
  f.cases.push_back(
      make_case("0001", "comm_only", 64, {{StreamId::comm, TaskKind::collective, 0, 8, "ag", {}}}));
  f.cases[1].tasks[0].bytes = 8 * 4096;
  std::ostringstream out;
  write_speedup_svg(out, f);
  const std::string svg = out.str();
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("busbw (GB/s)"), std::string::npos);
  EXPECT_NE(svg.find("message size"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker\""), 2u);
}

TEST(PicturesSpeedup, ASinglePointIsStillDrawn) {
  ResultFile f;
  f.cases.push_back(make_case("0000", "baseline", 8, baseline_pattern()));
  std::ostringstream out;
  write_speedup_svg(out, f);
  EXPECT_EQ(xml_problem(out.str()), "");
  EXPECT_EQ(count(out.str(), "class=\"marker\""), 1u);
}

// A sweep where batch shrinks as seq grows (tokens fixed): one line per strategy along seq,
// batch noted as riding along; --x batch draws along batch; --x of a field that does not vary
// is refused naming the valid ones.
ResultFile covarying_file() {
  ResultFile f;
  int id = 0;
  for (const auto& [batch, seq] : {std::pair{4, 8}, {2, 16}, {1, 32}}) {
    for (const char* strategy : {"baseline", "flash"}) {
      CaseResult c =
          make_case("000" + std::to_string(id++), strategy, seq,
                    std::string(strategy) == "flash" ? flash_pattern() : baseline_pattern());
      c.batch = batch;
      f.cases.push_back(std::move(c));
    }
  }
  return f;
}

TEST(PicturesSpeedup, FieldsThatChangeTogetherAreOneLineAlongOneOfThem) {
  const ResultFile f = covarying_file();
  std::ostringstream out;
  write_speedup_svg(out, f);
  const std::string svg = out.str();
  EXPECT_EQ(count(svg, "class=\"series"), 2u) << svg;  // not one per (batch, seq)
  EXPECT_NE(svg.find(">seq</text>"), std::string::npos);
  EXPECT_NE(svg.find("batch changes with seq: 4 at seq 8 … 1 at seq 32"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker\""), 6u);

  std::ostringstream by_batch;
  write_speedup_svg(by_batch, f, "batch");
  EXPECT_NE(by_batch.str().find(">batch</text>"), std::string::npos);
  EXPECT_NE(by_batch.str().find("seq changes with batch"), std::string::npos);
  try {
    std::ostringstream bad;
    write_speedup_svg(bad, f, "hidden");
    FAIL() << "--x hidden accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--x: 'hidden'"), std::string::npos) << what;
    EXPECT_NE(what.find("valid choices: seq, batch)"), std::string::npos) << what;
  }
}

// Colours never repeat within a chart, however many lines it has.
TEST(PicturesSpeedup, EverySeriesHasItsOwnColour) {
  // Sixteen shapes (hidden 8 ... 128), each with its baseline and one slice count: a line per
  // slice count, along hidden.
  ResultFile f;
  for (int c = 1; c <= 16; ++c) {
    for (const std::string& strategy : {std::string("baseline"), "slicing:" + std::to_string(c)}) {
      f.cases.push_back(make_case(std::to_string(f.cases.size()), strategy, 8, baseline_pattern(),
                                  strategy == "baseline" ? 1.0 : 1.0 - 0.01 * c));
      f.cases.back().hidden = 8 * c;
    }
  }
  std::ostringstream out;
  write_speedup_svg(out, f);
  const std::string svg = out.str();
  std::set<std::string> colours;
  size_t traces = 0;
  for (size_t at = svg.find("class=\"trace\""); at != std::string::npos;
       at = svg.find("class=\"trace\"", at + 1)) {
    const size_t stroke = svg.find("stroke=\"", at) + 8;
    colours.insert(svg.substr(stroke, svg.find('"', stroke) - stroke));
    ++traces;
  }
  EXPECT_GT(traces, 10u);
  EXPECT_EQ(colours.size(), traces);
}

// Every legend entry names a mark the picture draws, and every mark has one.
std::set<std::string> attribute_values(const std::string& svg, const std::string& name) {
  std::set<std::string> out;
  const std::string key = name + "=\"";
  for (size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
    const size_t from = at + key.size();
    out.insert(svg.substr(from, svg.find('"', from) - from));
  }
  return out;
}

TEST(Pictures, TheLegendExplainsEveryMarkAndNothingElse) {
  const ResultFile f = sample_file();
  std::ostringstream speedup, breakdown;
  write_speedup_svg(speedup, f);
  write_breakdown_svg(breakdown, f);
  for (const std::string& svg :
       {timeline(f, "0003", 1), timeline(f, "0002", 0), speedup.str(), breakdown.str()}) {
    EXPECT_EQ(attribute_values(svg, "data-mark"), attribute_values(svg, "data-for")) << svg;
  }
  // The flash timeline's lanes hold idle gaps: the legend says what they are.
  EXPECT_NE(timeline(f, "0003", 1).find("idle with no dependency pending"), std::string::npos);
}

// Group labels name only what differs between shapes; what they share is said once.
TEST(PicturesBreakdown, GroupLabelsNameOnlyTheFieldsThatVary) {
  ResultFile f = sample_file();
  std::ostringstream out;
  write_breakdown_svg(out, f);
  const std::string svg = out.str();
  EXPECT_EQ(count(svg, "class=\"shape-label\""), 2u);
  EXPECT_NE(svg.find(">seq 8</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">seq 16</text>"), std::string::npos);
  EXPECT_NE(svg.find("Every shape: mlp, batch 2, hidden 8, ffn 32, fp32, world 2"),
            std::string::npos);
}

// The number attribute `name` of the element that starts at `at`.
double number_attr(const std::string& svg, size_t at, const std::string& name) {
  const size_t v = svg.find(" " + name + "=\"", at) + name.size() + 3;
  return std::stod(svg.substr(v, svg.find('"', v) - v));
}

// Read as a person reads the picture: every bar's height, in ms on the axis that the T_lb
// line's stated time fixes, is the T its label states; also where a case ran faster than its
// shape's compute_only, whose T_comp segment would otherwise stack above the label.
TEST(PicturesBreakdown, EveryBarStandsAtTheHeightItsLabelStates) {
  ResultFile f = sample_file();
  f.cases.push_back(make_case("0008", "slicing:4", 8, baseline_pattern(), 0.4));  // T 2.04 ms
  std::ostringstream out;
  write_breakdown_svg(out, f);
  const std::string svg = out.str();
  const size_t tlb_title = svg.find("T_lb = max(T_comp, T_comm) = 4 ms");
  ASSERT_NE(tlb_title, std::string::npos);
  const size_t tlb = svg.rfind("<line", tlb_title);
  const double tlb_y = number_attr(svg, tlb, "y1");
  int bars = 0;
  for (size_t g = svg.find("class=\"bar-group\""); g != std::string::npos;
       g = svg.find("class=\"bar-group\"", g + 1), ++bars) {
    const size_t group_end = svg.find("</g>", g);
    double height = 0, bottom = 0;
    for (size_t r = svg.find("<rect", g); r < group_end; r = svg.find("<rect", r + 1)) {
      height += number_attr(svg, r, "height");
      bottom = std::max(bottom, number_attr(svg, r, "y") + number_attr(svg, r, "height"));
    }
    const size_t label = svg.find("class=\"bar-time\"", g);
    ASSERT_LT(label, group_end);
    const size_t text = svg.find('>', label) + 1;
    const double stated_ms = std::stod(svg.substr(text, svg.find('<', text) - text));
    const double drawn_ms = height * 4 / (bottom - tlb_y);  // the T_lb line stands at 4 ms
    EXPECT_NEAR(drawn_ms, stated_ms, 0.01 * stated_ms + 0.01) << svg.substr(g, group_end - g);
  }
  EXPECT_EQ(bars, 7);
  EXPECT_NE(svg.find("slicing:4 (case 0008): T_comp, cut at this case"), std::string::npos);
}

// A simulated file's banner is short and names the machine; the detail is in its tooltip and
// in the caption, and the legend sits below it.
TEST(Pictures, ASimulatedBannerIsShortWithItsDetailInTheCaption) {
  ResultFile f = sample_file();
  f.system.link_emulation = "none";
  f.system.simulated =
      "machine 'h200_test' (bench_configs/machines/h200.yaml); " + std::string(600, 'x');
  for (const std::string& svg : {timeline(f, "0003", 1)}) {
    EXPECT_NE(svg.find(">SIMULATED with h200_test: predicted, not measured</text>"),
              std::string::npos)
        << svg;
    EXPECT_NE(svg.find("class=\"caption\""), std::string::npos);
    const size_t banner = svg.find("class=\"emulated\"");
    const size_t legend = svg.find("class=\"legend\"");
    ASSERT_NE(banner, std::string::npos);
    ASSERT_NE(legend, std::string::npos);
    // The y of the element that starts at `at`.
    const auto y_of = [&](size_t at) {
      const size_t y = svg.find(" y=\"", at) + 4;
      return std::stod(svg.substr(y, svg.find('"', y) - y));
    };
    EXPECT_LT(y_of(svg.rfind("<text", banner)) + 12, y_of(svg.find("<text", legend)));
  }
}

}  // namespace
}  // namespace fob
