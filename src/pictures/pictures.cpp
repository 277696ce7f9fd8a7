// The timeline picture: one iteration of one case as a Gantt chart. Its job is to show why one
// strategy finishes before another, so what makes a step long is drawn on top of the tasks:
// the waits a cross-stream dependency forced on a stream (hatched, with an arrow from the task
// waited for), the idle gaps no dependency explains (dotted: a core busy with another rank where
// ranks share cores, a launch's delay), and the exposed communication (a rank's comm stream busy
// while its compute stream idles, a red band across the rank's lanes).
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
#include "picture_layout.h"
#include "pictures_common.h"
#include "svg_writer.h"
#include "timeline_model.h"

namespace fob {
namespace {

using svg::attr;
using svg::num;

constexpr double kWidth = 1200;
constexpr double kLeft = 130;   // lane labels
constexpr double kRight = 200;  // per-lane totals
constexpr double kLaneHeight = 28;
constexpr double kRankGap = 10;
constexpr double kTaskInset = 4;  // a task's rect leaves this much of its lane above and below
constexpr double kWaitHeight = 12;
constexpr int kKinds = kNumTaskKinds;

const char* kind_name(int kind) {
  return kind >= 0 && kind < kKinds ? task_kind_info(kind).name : "other";
}

const char* kind_colour(int kind) {
  return task_kind_info(kind).colour;
}

using timeline::Idle;
using timeline::Interval;
using timeline::Model;
using timeline::Placed;
using timeline::Wait;

// Gaps narrower than this many pixels are not drawn: they would be specks.
constexpr double kMinGapPx = 1.5;

// The case a timeline shows unless told: the first that is not a reference mode.
const CaseResult& first_shown(const ResultFile& file) {
  if (file.cases.empty()) throw InputError("the results file holds no cases");
  for (const CaseResult& c : file.cases) {
    if (!c.is_reference()) return c;
  }
  return file.cases.front();
}

class Timeline {
 public:
  Timeline(const ResultFile& file, const CaseResult& c, int iter);
  void write(std::ostream& out) const;

 private:
  double lane_y(int rank, int stream) const {
    return top_ + rank * (kNumStreams * kLaneHeight + kRankGap) + stream * kLaneHeight;
  }
  double x(double t) const { return kLeft + (kWidth - kLeft - kRight) * (t / m_.t_max); }
  bool drawn(const Idle& g) const { return x(g.to) - x(g.from) >= kMinGapPx; }
  std::string task_title(const Placed& p) const;
  std::vector<std::string> subtitles() const;
  pictures::Legend legend() const;
  void write_axis(svg::Document& doc) const;
  void write_rank(svg::Document& doc, int rank) const;
  void write_tasks(svg::Document& doc, int rank) const;
  void write_gaps(svg::Document& doc, int rank, double* waited) const;

  const ResultFile& file_;
  const CaseResult& c_;
  Model m_;
  double header_ = 0;  // the header's height
  double top_ = 0;     // the first lane's top
  std::vector<std::string> caption_;
};

constexpr double kTextWidth = kWidth - kLeft - 10;  // the header's and legend's room

Timeline::Timeline(const ResultFile& file, const CaseResult& c, int iter)
    : file_(file), c_(c), m_(c, iter) {
  const std::string title =
      "Timeline of case " + c_.id + ": " + c_.workload + ", strategy " + c_.strategy;
  header_ = pictures::header_height(kTextWidth, title, subtitles(), file_.system);
  top_ = header_ + legend().height() + 34;
  std::vector<std::string> notes;
  if (!file_.system.notes.empty()) notes.push_back("Note: " + file_.system.notes);
  caption_ = pictures::caption_lines(file_.system, notes, kWidth - 20);
}

std::vector<std::string> Timeline::subtitles() const {
  std::vector<std::string> lines{
      pictures::shape_text(c_) + " · iteration " + std::to_string(m_.iter) + " of 0.." +
      std::to_string(c_.iters - 1) + " · step " + svg::ms(m_.step) + " ms (slowest rank)" +
      (file_.system.timer.empty() ? "" : " · timer: " + file_.system.timer)};
  if (c_.ranks() < c_.world) {
    const std::string k = std::to_string(c_.ranks());
    const std::string shown =
        c_.ranks() == 1 ? "Rank 0" : "Ranks 0.." + std::to_string(c_.ranks() - 1);
    lines.push_back(shown + " of " + std::to_string(c_.world) +
                    " shown: the file stores only these, as the ranks of this ring are "
                    "rotations of one another: rank r ran exactly as rank r mod " +
                    k + ", its peers shifted by r − r mod " + k + ".");
  }
  return lines;
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

// An entry for every kind of mark the lanes draw, and none for a mark they do not.
pictures::Legend Timeline::legend() const {
  using pictures::Legend;
  Legend legend(kTextWidth, false);
  for (int kind : m_.kinds) {
    legend.add(std::string("kind-") + kind_name(kind), Legend::Swatch::box,
               attr("fill", kind_colour(kind)), kind_name(kind));
  }
  if (!m_.waits.empty()) {
    legend.add("wait", Legend::Swatch::box, " fill=\"url(#wait-hatch)\" stroke=\"#c00000\"",
               "waited for the other stream (arrow: from the task it waited for)");
  }
  if (std::any_of(m_.idles.begin(), m_.idles.end(), [&](const Idle& g) { return drawn(g); })) {
    legend.add("idle", Legend::Swatch::box, " fill=\"url(#idle-dots)\" stroke=\"#7f7f7f\"",
               "idle with no dependency pending: a core busy with another rank, or launch delay");
  }
  if (std::any_of(m_.exposed.begin(), m_.exposed.end(), [](const auto& e) { return !e.empty(); })) {
    legend.add("exposed", Legend::Swatch::box, " fill=\"#e15759\" fill-opacity=\"0.3\"",
               "exposed comm: comm busy, compute idle");
  }
  return legend;
}

void Timeline::write_axis(svg::Document& doc) const {
  const int world = std::max(c_.ranks(), 0);  // the ranks the case stores
  const double bottom = lane_y(world, 0) - kRankGap;
  const std::vector<double> ticks = svg::nice_ticks(0, m_.t_max * 1e3, 10);
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
  if (std::isfinite(m_.step)) {
    doc.line(x(m_.step), top_ - 8, x(m_.step), bottom,
             " class=\"step\" stroke=\"black\""
             " stroke-dasharray=\"4 3\"");
    doc.text(x(m_.step), top_ - 10, "step " + svg::ms(m_.step) + " ms", " text-anchor=\"end\"");
  }
}

void Timeline::write_tasks(svg::Document& doc, int rank) const {
  for (int s = 0; s < kNumStreams; ++s) {
    const double y = lane_y(rank, s);
    for (const Placed& p : m_.lanes[static_cast<size_t>(rank) * kNumStreams + s]) {
      const TaskRecord& rec = c_.tasks[static_cast<size_t>(p.row)];
      const double w = std::max(x(p.end) - x(p.start), 0.75);  // a tiny task stays visible
      const std::string kind = std::string("kind-") + kind_name(rec.kind);
      doc.rect(x(p.start), y + kTaskInset, w, kLaneHeight - 2 * kTaskInset,
               attr("class", "task " + kind) + attr("data-mark", kind) +
                   attr("data-task", std::to_string(rec.task)) +
                   attr("fill", kind_colour(rec.kind)) + " stroke=\"white\" stroke-width=\"0.5\"",
               task_title(p));
      // A label only where it fits.
      if (!rec.label.empty() && w > pictures::text_width(std::string(rec.label), 10) + 6) {
        doc.text(x(p.start) + 3, y + kLaneHeight / 2 + 3.5, rec.label,
                 " class=\"task-label\" font-size=\"10\" fill=\"white\""
                 " pointer-events=\"none\"");
      }
    }
  }
}

// The waits (hatched, with an arrow from what was waited for) and the idle gaps (dotted) on
// a rank's lanes; adds each stream's waited time to waited[stream].
void Timeline::write_gaps(svg::Document& doc, int rank, double* waited) const {
  const double inset = (kLaneHeight - kWaitHeight) / 2;
  for (const Wait& wt : m_.waits) {
    if (wt.rank != rank) continue;
    waited[wt.stream] += wt.to - wt.from;
    const std::string why = "rank " + std::to_string(rank) + ": " + wt.task_label + " waited " +
                            svg::ms(wt.to - wt.from) + " ms (" + svg::ms(wt.from) + "–" +
                            svg::ms(wt.to) + " ms) for " + wt.dep_label + " on the " +
                            to_string(static_cast<StreamId>(wt.dep_stream)) +
                            " stream, which ended at " + svg::ms(wt.dep_end) + " ms";
    const double y = lane_y(rank, wt.stream);
    // Thinner than a task, so the exposed-communication band stays visible around it.
    doc.rect(x(wt.from), y + inset, x(wt.to) - x(wt.from), kWaitHeight,
             " class=\"wait\" data-mark=\"wait\" fill=\"url(#wait-hatch)\" stroke=\"#c00000\""
             " stroke-width=\"1\"",
             why);
    const double dep_y = lane_y(rank, wt.dep_stream) + kLaneHeight / 2;
    doc.line(x(wt.dep_end), dep_y, x(wt.to), y + kLaneHeight / 2,
             " class=\"dep\" data-mark=\"wait\" stroke=\"#c00000\" stroke-width=\"1.2\""
             " marker-end=\"url(#arrow)\"",
             why);
  }
  for (const Idle& g : m_.idles) {
    if (g.rank != rank || !drawn(g)) continue;
    doc.rect(x(g.from), lane_y(rank, g.stream) + inset, x(g.to) - x(g.from), kWaitHeight,
             " class=\"idle\" data-mark=\"idle\" fill=\"url(#idle-dots)\" stroke=\"#7f7f7f\""
             " stroke-width=\"0.8\"",
             "rank " + std::to_string(rank) + ": idle " + svg::ms(g.to - g.from) + " ms (" +
                 svg::ms(g.from) + "–" + svg::ms(g.to) + " ms) before " + g.task_label +
                 " with no dependency pending");
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
  for (const Interval& iv : m_.exposed[static_cast<size_t>(rank)]) {
    exposed_total += iv.second - iv.first;
    doc.rect(x(iv.first), band_top, x(iv.second) - x(iv.first), kNumStreams * kLaneHeight,
             " class=\"exposed\" data-mark=\"exposed\" fill=\"#e15759\" fill-opacity=\"0.3\"",
             "rank " + std::to_string(rank) + ": exposed communication " + svg::ms(iv.first) + "–" +
                 svg::ms(iv.second) + " ms (" + svg::ms(iv.second - iv.first) + " ms)");
  }
  write_tasks(doc, rank);
  double waited[kNumStreams] = {0, 0};
  write_gaps(doc, rank, waited);
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
  const double bottom = lane_y(world, 0) - kRankGap;
  const double caption_top = bottom + 66;
  const double height = caption_top + pictures::kCaptionLine * static_cast<double>(caption_.size());

  svg::Document doc(out, kWidth, height);
  doc.raw(
      "<defs>\n"
      "<pattern id=\"wait-hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\""
      " patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde0e0\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c00000\" stroke-width=\"2.5\"/>"
      "</pattern>\n"
      "<pattern id=\"idle-dots\" patternUnits=\"userSpaceOnUse\" width=\"4\" height=\"4\">"
      "<rect width=\"4\" height=\"4\" fill=\"#f2f2f2\"/><circle cx=\"2\" cy=\"2\" r=\"0.9\""
      " fill=\"#7f7f7f\"/></pattern>\n"
      "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\""
      " markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\""
      " fill=\"#c00000\"/></marker>\n"
      "</defs>\n");
  pictures::write_header(
      doc, kLeft, kTextWidth,
      "Timeline of case " + c_.id + ": " + c_.workload + ", strategy " + c_.strategy, subtitles(),
      file_.system);
  legend().write(doc, kLeft, header_ + 12);
  write_axis(doc);
  for (int r = 0; r < world; ++r) write_rank(doc, r);
  pictures::write_caption(doc, 10, caption_top, caption_);
  doc.finish();
}

}  // namespace

void write_timeline_svg(std::ostream& out, const ResultFile& file, const TimelineOptions& options) {
  const CaseResult& c =
      options.case_id.empty() ? first_shown(file) : select_case(file, options.case_id, "--case");
  const Timeline timeline(file, c, timeline::pick_iteration(c, options.iter));
  timeline.write(out);
}

}  // namespace fob
