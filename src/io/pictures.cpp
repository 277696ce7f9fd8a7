// The timeline picture: one iteration of one case as a Gantt chart. Its job is to show why one
// strategy finishes before another, so the two things that make a step long are drawn on top
// of the tasks: the waits a cross-stream dependency forced on a stream (hatched, with an arrow
// from the task waited for), and the exposed communication (a rank's comm stream busy while
// its compute stream idles, a red band across the rank's lanes).
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fob/pictures.h"
#include "fob/plan.h"
#include "fob/types.h"
#include "pictures_common.h"
#include "svg_writer.h"

namespace fob {
namespace {

using svg::attr;
using svg::num;
using Interval = std::pair<double, double>;

constexpr double kWidth = 1200;
constexpr double kLeft = 130;   // lane labels
constexpr double kRight = 190;  // per-lane totals
constexpr double kLaneHeight = 28;
constexpr double kRankGap = 10;
constexpr double kTaskInset = 4;  // a task's rect leaves this much of its lane above and below
constexpr double kWaitHeight = 12;
constexpr int kKinds = 8;

const char* kind_name(int kind) {
  if (kind < 0 || kind >= kKinds) return "other";
  return to_string(static_cast<TaskKind>(kind));
}

// Compute kinds in blues and greens, transfers in warm colours; red is kept for waits and
// exposed communication so that those stand out.
const char* kind_colour(int kind) {
  static const char* const colours[kKinds] = {"#4e79a7", "#f28e2b", "#edc948", "#b07aa1",
                                              "#9c6b30", "#76b7b2", "#59a14f", "#8cd17d"};
  return kind >= 0 && kind < kKinds ? colours[kind] : "#999999";
}

const CaseResult& find_case(const ResultFile& file, const std::string& id) {
  if (file.cases.empty()) throw InputError("the results file holds no cases");
  if (id.empty()) {
    for (const CaseResult& c : file.cases) {
      if (!c.is_reference()) return c;
    }
    return file.cases.front();
  }
  std::string choices;
  for (const CaseResult& c : file.cases) {
    if (c.id == id) return c;
    choices += (choices.empty() ? "" : ", ") + c.id;
  }
  throw InputError("--case: no case '" + id + "' in the file (valid choices: " + choices + ")");
}

// The iteration whose step time is the median (the lower middle for an even count), so that
// the picture shows a typical step rather than an outlier.
int pick_iteration(const CaseResult& c, int iter) {
  if (c.iters <= 0) throw InputError("case " + c.id + " has no measured iterations");
  if (iter >= c.iters || iter < -1) {
    throw InputError("--iter: no iteration " + std::to_string(iter) + " in case " + c.id +
                     " (valid choices: 0.." + std::to_string(c.iters - 1) + ")");
  }
  if (iter >= 0) return iter;
  std::vector<std::pair<double, int>> steps;
  for (int i = 0; i < c.iters; ++i) {
    const double s = c.step(i);
    if (std::isfinite(s)) steps.emplace_back(s, i);
  }
  if (steps.empty()) return 0;
  std::sort(steps.begin(), steps.end());
  return steps[(steps.size() - 1) / 2].second;
}

// Sorted, disjoint intervals covering the same time as `in`.
std::vector<Interval> merge(std::vector<Interval> in) {
  std::sort(in.begin(), in.end());
  std::vector<Interval> out;
  for (const Interval& iv : in) {
    if (!(iv.second > iv.first)) continue;
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

// Time in `a` not in `b`; both sorted and disjoint.
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  for (Interval iv : a) {
    for (const Interval& cut : b) {
      if (cut.second <= iv.first || cut.first >= iv.second) continue;
      if (cut.first > iv.first) out.emplace_back(iv.first, cut.first);
      iv.first = std::max(iv.first, cut.second);
      if (iv.first >= iv.second) break;
    }
    if (iv.second > iv.first) out.push_back(iv);
  }
  return out;
}

// One task of the chosen iteration, in plan order on its stream.
struct Placed {
  int row = 0;  // index into CaseResult::tasks
  double start = 0, end = 0;
};

// A gap a cross-stream dependency made on the waiting task's stream.
struct Wait {
  int rank = 0, stream = 0;
  double from = 0, to = 0;  // the gap: previous task's end (or 0) to the task's start
  double dep_end = 0;
  int dep_stream = 0;
  std::string task_label, dep_label;
};

class Timeline {
 public:
  Timeline(const ResultFile& file, const CaseResult& c, int iter)
      : file_(file),
        c_(c),
        iter_(iter),
        legend_y_(file.system.link_emulated() ? 84 : 66),
        top_(legend_y_ + 34) {
    collect();
  }
  void write(std::ostream& out) const;

 private:
  void collect();
  // Each timed task on its lane, sorted in plan order; returns (rank, task id) -> row.
  std::map<std::pair<int, int>, int> place_tasks(int world, int tasks);
  void find_waits(const std::map<std::pair<int, int>, int>& row_of);
  double lane_y(int rank, int stream) const {
    return top_ + rank * (kNumStreams * kLaneHeight + kRankGap) + stream * kLaneHeight;
  }
  double x(double t) const { return kLeft + (kWidth - kLeft - kRight) * (t / t_max_); }
  std::string task_title(const Placed& p) const;
  void write_header(svg::Document& doc) const;
  void write_legend(svg::Document& doc, double y) const;
  void write_axis(svg::Document& doc) const;
  void write_rank(svg::Document& doc, int rank) const;

  const ResultFile& file_;
  const CaseResult& c_;
  int iter_;
  double legend_y_;  // below the title lines, one more of them for an emulated link
  double top_;       // the first lane's top
  double step_ = 0;
  double t_max_ = 1e-3;
  std::vector<std::vector<Placed>> lanes_;      // [rank * kNumStreams + stream]
  std::vector<std::vector<Interval>> exposed_;  // [rank]
  std::vector<Wait> waits_;
  std::set<int> kinds_;
};

void Timeline::collect() {
  const int world = std::max(c_.ranks(), 0);  // the ranks the case stores
  const int tasks = std::max(c_.max_tasks, 0);
  const size_t base = c_.timing_index(iter_, 0, 0);
  if (c_.tasks.size() < static_cast<size_t>(world) * tasks ||
      c_.task_start.size() < base + static_cast<size_t>(world) * tasks ||
      c_.task_end.size() < c_.task_start.size()) {
    throw InputError("case " + c_.id + ": task arrays are shorter than world × tasks");
  }
  step_ = c_.step(iter_);
  const std::map<std::pair<int, int>, int> row_of = place_tasks(world, tasks);
  find_waits(row_of);
  for (int r = 0; r < world; ++r) {
    std::vector<Interval> comp, comm;
    for (const Placed& p : lanes_[static_cast<size_t>(r) * kNumStreams]) {
      comp.emplace_back(p.start, p.end);
    }
    for (const Placed& p : lanes_[static_cast<size_t>(r) * kNumStreams + 1]) {
      comm.emplace_back(p.start, p.end);
    }
    exposed_.push_back(subtract(merge(comm), merge(comp)));
  }
}

std::map<std::pair<int, int>, int> Timeline::place_tasks(int world, int tasks) {
  const size_t base = c_.timing_index(iter_, 0, 0);
  lanes_.assign(static_cast<size_t>(world) * kNumStreams, {});
  std::map<std::pair<int, int>, int> row_of;
  for (int r = 0; r < world; ++r) {
    for (int t = 0; t < tasks; ++t) {
      const int row = r * tasks + t;
      const TaskRecord& rec = c_.tasks[static_cast<size_t>(row)];
      const double start = c_.task_start[base + static_cast<size_t>(row)];
      const double end = c_.task_end[base + static_cast<size_t>(row)];
      if (rec.task < 0 || !std::isfinite(start) || !std::isfinite(end)) continue;
      if (rec.stream < 0 || rec.stream >= kNumStreams) continue;
      row_of[{r, rec.task}] = row;
      lanes_[static_cast<size_t>(r) * kNumStreams + rec.stream].push_back({row, start, end});
      kinds_.insert(rec.kind);
      t_max_ = std::max(t_max_, end);
    }
  }
  if (std::isfinite(step_)) t_max_ = std::max(t_max_, step_);
  t_max_ *= 1.02;  // room for the last task's outline
  // Plan order on a stream is task-id order: the order the executor launches them in.
  auto by_id = [&](const Placed& a, const Placed& b) {
    return c_.tasks[static_cast<size_t>(a.row)].task < c_.tasks[static_cast<size_t>(b.row)].task;
  };
  for (auto& lane : lanes_) std::sort(lane.begin(), lane.end(), by_id);
  return row_of;
}

// A cross-stream dependency made the stream wait when it ended after the stream's previous
// task: then the dependency, not the stream's order, decided when the task could start. Of
// several, the one that ended last is the one that held the task.
void Timeline::find_waits(const std::map<std::pair<int, int>, int>& row_of) {
  // For each task, the end of the task before it on its stream, and where it is drawn.
  std::map<int, double> previous_end;  // row -> end of the previous task on the stream (or 0)
  std::map<int, Placed> placed;        // row -> times
  for (const auto& lane : lanes_) {
    double prev = 0;
    for (const Placed& p : lane) {
      previous_end[p.row] = prev;
      placed[p.row] = p;
      prev = p.end;
    }
  }
  std::map<int, int> holder;  // row -> row of the dependency that ended last
  for (const DepRecord& d : c_.deps) {
    auto t = row_of.find({d.rank, d.task});
    auto on = row_of.find({d.rank, d.on});
    if (t == row_of.end() || on == row_of.end()) continue;
    const TaskRecord& task = c_.tasks[static_cast<size_t>(t->second)];
    const TaskRecord& dep = c_.tasks[static_cast<size_t>(on->second)];
    if (task.stream == dep.stream) continue;
    if (placed[on->second].end <= previous_end[t->second]) continue;
    auto h = holder.find(t->second);
    if (h == holder.end() || placed[on->second].end > placed[h->second].end) {
      holder[t->second] = on->second;
    }
  }
  for (const auto& [row, dep_row] : holder) {
    const TaskRecord& task = c_.tasks[static_cast<size_t>(row)];
    const TaskRecord& dep = c_.tasks[static_cast<size_t>(dep_row)];
    const double from = std::max(previous_end[row], 0.0);
    const double to = placed[row].start;
    if (!(to > from)) continue;
    waits_.push_back(
        {task.rank, task.stream, from, to, placed[dep_row].end, dep.stream, task.label, dep.label});
  }
}

std::string Timeline::task_title(const Placed& p) const {
  const TaskRecord& rec = c_.tasks[static_cast<size_t>(p.row)];
  std::string t =
      (rec.label.empty() ? "task " + std::to_string(rec.task) : std::string(rec.label)) + " (" +
      kind_name(rec.kind) + ", rank " + std::to_string(rec.rank) + ")\nstart " + svg::ms(p.start) +
      " ms, end " + svg::ms(p.end) + " ms, duration " + svg::ms(p.end - p.start) + " ms";
  if (rec.bytes > 0) t += "\n" + std::to_string(rec.bytes) + " bytes sent";
  if (rec.peer >= 0) t += " to rank " + std::to_string(rec.peer);
  if (rec.flops > 0) t += "\n" + num(rec.flops / 1e9) + " GFLOP";
  return t;
}

void Timeline::write_header(svg::Document& doc) const {
  doc.text(kLeft, 24,
           "Timeline of case " + c_.id + ": " + c_.workload + ", strategy " + c_.strategy,
           " font-size=\"16\" font-weight=\"bold\"");
  doc.text(kLeft, 44,
           pictures::shape_text(c_) + " · iteration " + std::to_string(iter_) + " of 0.." +
               std::to_string(c_.iters - 1) + " · step " + svg::ms(step_) + " ms (slowest rank)" +
               (file_.system.timer.empty() ? "" : " · timer: " + file_.system.timer) +
               (c_.ranks() < c_.world
                    ? " · ranks 0.." + std::to_string(c_.ranks() - 1) + " of " +
                          std::to_string(c_.world) + " shown: rank r ran as rank r mod " +
                          std::to_string(c_.ranks())
                    : ""));
  const std::string note = pictures::emulated_note(file_.system);
  if (!note.empty()) {
    doc.text(kLeft, 62, note, " class=\"emulated\" fill=\"#c00000\" font-weight=\"bold\"");
  }
}

void Timeline::write_legend(svg::Document& doc, double y) const {
  double lx = kLeft;
  for (int kind : kinds_) {
    doc.rect(lx, y - 10, 14, 12, attr("fill", kind_colour(kind)));
    doc.text(lx + 18, y, kind_name(kind));
    lx += 30 + 7.0 * static_cast<double>(std::string(kind_name(kind)).size());
  }
  doc.rect(lx, y - 10, 14, 12, " fill=\"url(#wait-hatch)\" stroke=\"#c00000\"");
  doc.text(lx + 18, y, "stream waited for the other stream (arrow: what it waited for)");
  lx += 400;
  doc.rect(lx, y - 10, 14, 12, " fill=\"#e15759\" fill-opacity=\"0.3\"");
  doc.text(lx + 18, y, "exposed comm: comm busy, compute idle");
}

void Timeline::write_axis(svg::Document& doc) const {
  const int world = std::max(c_.ranks(), 0);  // the ranks the case stores
  const double bottom = lane_y(world, 0) - kRankGap;
  const std::vector<double> ticks = svg::nice_ticks(0, t_max_ * 1e3, 10);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  doc.open("g", " class=\"axis\"");
  for (double tick : ticks) {
    const double tx = x(tick / 1e3);
    if (tx > kWidth - kRight + 0.5) continue;
    doc.line(tx, top_ - 4, tx, bottom, " stroke=\"#dddddd\" class=\"grid\"");
    doc.line(tx, bottom, tx, bottom + 5, " stroke=\"black\"");
    doc.text(tx, bottom + 18, svg::tick_label(tick, step), " text-anchor=\"middle\"");
  }
  doc.line(kLeft, bottom, kWidth - kRight, bottom, " stroke=\"black\"");
  doc.text((kLeft + kWidth - kRight) / 2, bottom + 36, "time since the iteration's start (ms)",
           " text-anchor=\"middle\"");
  doc.close("g");
  if (std::isfinite(step_)) {
    doc.line(x(step_), top_ - 8, x(step_), bottom,
             " class=\"step\" stroke=\"black\""
             " stroke-dasharray=\"4 3\"");
    doc.text(x(step_), top_ - 10, "step " + svg::ms(step_) + " ms", " text-anchor=\"end\"");
  }
}

void Timeline::write_rank(svg::Document& doc, int rank) const {
  doc.open("g", attr("class", "rank") + attr("data-rank", std::to_string(rank)));
  for (int s = 0; s < kNumStreams; ++s) {
    const std::string name = to_string(static_cast<StreamId>(s));
    doc.rect(kLeft, lane_y(rank, s), kWidth - kLeft - kRight, kLaneHeight,
             attr("class", "lane") + attr("data-rank", std::to_string(rank)) +
                 attr("data-stream", name) + attr("fill", s == 0 ? "#f4f6f9" : "#faf7f2") +
                 " stroke=\"#e0e0e0\"");
    doc.text(kLeft - 8, lane_y(rank, s) + kLaneHeight / 2 + 4,
             "rank " + std::to_string(rank) + " " + name,
             " class=\"lane-label\" text-anchor=\"end\"");
  }

  // Behind the tasks, so in the compute lane the idle time shows red, and above the lane
  // backgrounds.
  const double band_top = lane_y(rank, 0);
  double exposed_total = 0;
  for (const Interval& iv : exposed_[static_cast<size_t>(rank)]) {
    exposed_total += iv.second - iv.first;
    doc.rect(x(iv.first), band_top, x(iv.second) - x(iv.first), kNumStreams * kLaneHeight,
             " class=\"exposed\" fill=\"#e15759\" fill-opacity=\"0.3\"",
             "rank " + std::to_string(rank) + ": exposed communication " + svg::ms(iv.first) + "–" +
                 svg::ms(iv.second) + " ms (" + svg::ms(iv.second - iv.first) + " ms)");
  }

  for (int s = 0; s < kNumStreams; ++s) {
    const double y = lane_y(rank, s);
    for (const Placed& p : lanes_[static_cast<size_t>(rank) * kNumStreams + s]) {
      const TaskRecord& rec = c_.tasks[static_cast<size_t>(p.row)];
      const double w = std::max(x(p.end) - x(p.start), 0.75);  // a tiny task stays visible
      doc.rect(x(p.start), y + kTaskInset, w, kLaneHeight - 2 * kTaskInset,
               attr("class", std::string("task kind-") + kind_name(rec.kind)) +
                   attr("data-task", std::to_string(rec.task)) +
                   attr("fill", kind_colour(rec.kind)) + " stroke=\"white\" stroke-width=\"0.5\"",
               task_title(p));
      // A label only where it fits (about 6 px a character at this size).
      if (!rec.label.empty() && w > 6.0 * static_cast<double>(rec.label.size()) + 6) {
        doc.text(x(p.start) + 3, y + kLaneHeight / 2 + 3.5, rec.label,
                 " class=\"task-label\" font-size=\"10\" fill=\"white\""
                 " pointer-events=\"none\"");
      }
    }
  }

  double waited[kNumStreams] = {0, 0};
  for (const Wait& wt : waits_) {
    if (wt.rank != rank) continue;
    waited[wt.stream] += wt.to - wt.from;
    const std::string why = "rank " + std::to_string(rank) + ": " + wt.task_label + " waited " +
                            svg::ms(wt.to - wt.from) + " ms (" + svg::ms(wt.from) + "–" +
                            svg::ms(wt.to) + " ms) for " + wt.dep_label + " on the " +
                            to_string(static_cast<StreamId>(wt.dep_stream)) +
                            " stream, which ended at " + svg::ms(wt.dep_end) + " ms";
    const double y = lane_y(rank, wt.stream);
    // Thinner than a task, so the exposed-communication band stays visible around it.
    doc.rect(x(wt.from), y + (kLaneHeight - kWaitHeight) / 2, x(wt.to) - x(wt.from), kWaitHeight,
             " class=\"wait\" fill=\"url(#wait-hatch)\" stroke=\"#c00000\" stroke-width=\"1\"",
             why);
    const double dep_y = lane_y(rank, wt.dep_stream) + kLaneHeight / 2;
    doc.line(x(wt.dep_end), dep_y, x(wt.to), y + kLaneHeight / 2,
             " class=\"dep\" stroke=\"#c00000\" stroke-width=\"1.2\" marker-end=\"url(#arrow)\"",
             why);
  }

  // Per-lane totals: the numbers that explain the step time, readable without hovering.
  const double tx = kWidth - kRight + 10;
  doc.text(tx, lane_y(rank, 0) + kLaneHeight / 2 + 4, "waited " + svg::ms(waited[0]) + " ms",
           " class=\"rank-waited\" font-size=\"11\" fill=\"#c00000\"");
  doc.text(tx, lane_y(rank, 1) + kLaneHeight / 2 + 4,
           "waited " + svg::ms(waited[1]) + ", exposed " + svg::ms(exposed_total) + " ms",
           " class=\"rank-exposed\" font-size=\"11\" fill=\"#c00000\"");
  doc.close("g");
}

void Timeline::write(std::ostream& out) const {
  const int world = std::max(c_.ranks(), 0);  // the ranks the case stores
  const double height = lane_y(world, 0) - kRankGap + 70;

  svg::Document doc(out, kWidth, height);
  doc.raw(
      "<defs>\n"
      "<pattern id=\"wait-hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\""
      " patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde0e0\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c00000\" stroke-width=\"2.5\"/>"
      "</pattern>\n"
      "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\""
      " markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\""
      " fill=\"#c00000\"/></marker>\n"
      "</defs>\n");
  write_header(doc);
  write_legend(doc, legend_y_);
  write_axis(doc);
  for (int r = 0; r < world; ++r) write_rank(doc, r);
  doc.finish();
}

}  // namespace

void write_timeline_svg(std::ostream& out, const ResultFile& file, const TimelineOptions& options) {
  const CaseResult& c = find_case(file, options.case_id);
  const Timeline timeline(file, c, pick_iteration(c, options.iter));
  timeline.write(out);
}

}  // namespace fob
