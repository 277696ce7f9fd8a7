// The token picture of an MoE case: where its router sent the tokens, from the results file's
// moe_load (docs/reports.md#pictures). A heatmap of source rank x destination rank
// with the counts in the cells, each rank's load and received bytes beside it, and a bar per
// expert (the busiest, past 128) coloured by the rank that owns it under the count of dropped
// choices.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "chart_axes.h"
#include "fob/pictures.h"
#include "fob/strategy.h"
#include "fob/types.h"
#include "picture_layout.h"
#include "svg_writer.h"

namespace fob {
namespace {

using svg::attr;

constexpr double kLeft = 70;
constexpr double kMatrixSide = 360;  // the heatmap's side at most
constexpr double kWidth = 960;
constexpr double kBarsHeight = 220;

std::string count_text(int64_t n) {
  return std::to_string(n);
}

// "12.3 MB": bytes for people.
std::string bytes_text(int64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1000 && u + 1 < std::size(units)) v /= 1000, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.3g %s", v, units[u]);
  return text;
}

// A heatmap cell's side: the matrix fits kMatrixSide however many ranks there are (past 360
// ranks a cell is under a pixel and the picture shows the matrix's pattern, not its cells).
double cell_side(int64_t n) {
  return std::min(72.0, kMatrixSide / static_cast<double>(n));
}

// A cell's fill: white for none, the first series colour's blue at the most.
std::string heat(double share) {
  const int level = static_cast<int>(255 - std::clamp(share, 0.0, 1.0) * 190);
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02xff", level, std::min(255, level + 25));
  return text;
}

double write_matrix(svg::Document& doc, const CaseResult& c, double top) {
  const MoeLoad& load = c.moe_load;
  const int64_t n = load.world();
  const double cell = cell_side(n);
  const int64_t most =
      std::max<int64_t>(1, *std::max_element(load.token_matrix.begin(), load.token_matrix.end()));
  const double font = std::min(13.0, cell / 3.2);
  doc.text(kLeft + cell * static_cast<double>(n) / 2, top - 8, "destination rank (its experts)",
           attr("text-anchor", "middle") + attr("font-size", 12));
  doc.text(18, top + cell * static_cast<double>(n) / 2, "source rank (its tokens)",
           attr("text-anchor", "middle") + attr("font-size", 12) +
               attr("transform", "rotate(-90 18 " + svg::num(top + cell * n / 2) + ")"));
  for (int64_t i = 0; i < n; ++i) {
    const double y = top + cell * static_cast<double>(i);
    if (cell >= 12) {
      doc.text(kLeft - 6, y + cell / 2 + 4, std::to_string(i),
               attr("text-anchor", "end") + attr("font-size", 11));
    }
    for (int64_t j = 0; j < n; ++j) {
      const double x = kLeft + cell * static_cast<double>(j);
      const int64_t v = load.token_matrix[static_cast<size_t>(i * n + j)];
      doc.open("g", attr("class", "cell") + attr("data-source", static_cast<double>(i)) +
                        attr("data-dest", static_cast<double>(j)) +
                        attr("data-tokens", static_cast<double>(v)));
      doc.rect(x, y, cell, cell,
               attr("fill", heat(static_cast<double>(v) / static_cast<double>(most))) +
                   (cell >= 4 ? attr("stroke", "#ffffff") : std::string()),
               "rank " + std::to_string(i) + " to rank " + std::to_string(j) + ": " +
                   count_text(v) + " token choices");
      if (font >= 6) {
        doc.text(x + cell / 2, y + cell / 2 + font / 3, count_text(v),
                 attr("text-anchor", "middle") + attr("font-size", font));
      }
      doc.close("g");
    }
  }
  return cell * static_cast<double>(n);
}

// Beside the heatmap: each rank's tokens, their share, dropped choices and received bytes.
void write_rank_table(svg::Document& doc, const CaseResult& c, double x, double top) {
  const MoeLoad& load = c.moe_load;
  int64_t all = 0;
  for (const int64_t v : load.rank_tokens) all += v;
  doc.text(x, top, "rank: the choices its experts take (share), its tokens' choices dropped,",
           attr("font-size", 12) + attr("font-weight", "bold"));
  doc.text(x, top + 15, "bytes it receives in the dispatch / the combine",
           attr("font-size", 12) + attr("font-weight", "bold"));
  const int64_t shown = std::min<int64_t>(load.world(), 24);
  for (int64_t r = 0; r < shown; ++r) {
    const auto i = static_cast<size_t>(r);
    const double y = top + 36 + 17 * static_cast<double>(r);
    const double share = all > 0 ? 100.0 * static_cast<double>(load.rank_tokens[i]) / all : 0;
    char text[200];
    std::snprintf(text, sizeof text, "rank %lld: %lld (%.0f%%), %lld dropped, %s / %s",
                  static_cast<long long>(r), static_cast<long long>(load.rank_tokens[i]), share,
                  static_cast<long long>(load.dropped[i]),
                  bytes_text(load.dispatch_bytes[i]).c_str(),
                  bytes_text(load.combine_bytes[i]).c_str());
    doc.rect(x, y - 10, 11, 11, attr("fill", charts::series_colour(i)));
    doc.text(x + 16, y, text, attr("font-size", 12));
  }
  if (shown < load.world()) {
    doc.text(x, top + 36 + 17 * static_cast<double>(shown),
             "... and " + std::to_string(load.world() - shown) + " more ranks",
             attr("font-size", 12));
  }
}

// The experts that get a bar: every one, or past kMaxBars (where a bar would be thinner than a
// few pixels and a million experts would make a million rectangles) the busiest, busiest first.
constexpr int64_t kMaxBars = 128;

std::vector<int64_t> experts_shown(const MoeLoad& load) {
  std::vector<int64_t> order(load.expert_tokens.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<int64_t>(e);
  if (order.size() <= static_cast<size_t>(kMaxBars)) return order;
  const auto tokens = [&](int64_t e) { return load.expert_tokens[static_cast<size_t>(e)]; };
  std::partial_sort(
      order.begin(), order.begin() + kMaxBars, order.end(),
      [&](int64_t a, int64_t b) { return tokens(a) != tokens(b) ? tokens(a) > tokens(b) : a < b; });
  order.resize(static_cast<size_t>(kMaxBars));
  return order;
}

std::string percent_of(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%",
                whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return text;
}

// Above the bars: the choices the capacity dropped (as a number: next to the experts' bars, a
// bar of them would often flatten the rest) and, where not every expert has a bar, what the
// others took.
void write_bars_notes(svg::Document& doc, const MoeLoad& load, const std::vector<int64_t>& shown,
                      double top) {
  int64_t dropped = 0, kept = 0, in_bars = 0;
  for (const int64_t v : load.dropped) dropped += v;
  for (const int64_t v : load.expert_tokens) kept += v;
  for (const int64_t e : shown) in_bars += load.expert_tokens[static_cast<size_t>(e)];
  doc.text(kLeft, top - 12,
           "dropped by the capacity: " + count_text(dropped) + " of " + count_text(dropped + kept) +
               " choices (" + percent_of(dropped, dropped + kept) + ")",
           attr("class", "dropped") + attr("font-size", 12));
  const auto experts = static_cast<int64_t>(load.expert_tokens.size());
  if (static_cast<int64_t>(shown.size()) == experts) return;
  doc.text(kWidth - 20, top - 12,
           "the " + count_text(kMaxBars) + " busiest of " + count_text(experts) +
               " experts, busiest first; the other " +
               count_text(experts - static_cast<int64_t>(shown.size())) + " took " +
               count_text(kept - in_bars) + " choices (" + percent_of(kept - in_bars, kept) + ")",
           attr("class", "others") + attr("text-anchor", "end") + attr("font-size", 12));
}

// A bar per expert shown, coloured by the rank that owns it.
void write_expert_bars(svg::Document& doc, const CaseResult& c, double top) {
  const MoeLoad& load = c.moe_load;
  const std::vector<int64_t> shown = experts_shown(load);
  write_bars_notes(doc, load, shown, top);
  int64_t most = 1;
  for (const int64_t v : load.expert_tokens) most = std::max(most, v);
  const double right = kWidth - 20;
  const double slot = (right - kLeft - 20) / static_cast<double>(std::max<size_t>(shown.size(), 1));
  charts::Scale y{0, static_cast<double>(most) * 1.1, top + kBarsHeight, top};
  const std::vector<double> ticks = svg::nice_ticks(0, y.hi, 5);
  if (!ticks.empty()) y.hi = std::max(y.hi, ticks.back());
  charts::write_y_axis(doc, y, kLeft, right, "token choices");
  for (size_t i = 0; i < shown.size(); ++i) {
    const int64_t e = shown[i];
    const auto owner = static_cast<size_t>(e % load.world());
    const int64_t value = load.expert_tokens[static_cast<size_t>(e)];
    const double x = kLeft + 10 + slot * static_cast<double>(i);
    const double h = y.from - y(static_cast<double>(value));
    doc.rect(x + slot * 0.1, y.from - h, slot * 0.8, h,
             attr("class", "expert") + attr("data-expert", std::to_string(e)) +
                 attr("fill", charts::series_colour(owner)),
             "expert " + std::to_string(e) + " (rank " + std::to_string(owner) +
                 "): " + count_text(value) + " token choices");
    if (slot >= 22) {
      doc.text(x + slot / 2, y.from - h - 3, count_text(value),
               attr("text-anchor", "middle") + attr("font-size", 10));
    }
    if (slot >= 14 || i % 8 == 0) {
      doc.text(x + slot / 2, y.from + 13, std::to_string(e),
               attr("text-anchor", "middle") + attr("font-size", 10));
    }
  }
  doc.line(kLeft, y.from, right, y.from, attr("stroke", "black"));
  const bool all = shown.size() == load.expert_tokens.size();
  doc.text((kLeft + right) / 2, y.from + 30,
           all ? "expert (coloured by the rank that owns it)"
               : "expert, busiest first (coloured by the rank that owns it)",
           attr("text-anchor", "middle") + attr("font-size", 12));
}

// The case the picture draws (see write_tokens_svg).
const CaseResult& token_case(const ResultFile& file, const std::string& selector) {
  if (selector.empty()) {
    // A reference mode's load is its strategy's, but compute_only moves no bytes.
    const CaseResult* first = nullptr;
    for (const CaseResult& c : file.cases) {
      if (c.moe_load.empty()) continue;
      if (!c.has_role(StrategyRole::compute_reference) &&
          !c.has_role(StrategyRole::comm_reference)) {
        return c;
      }
      if (first == nullptr) first = &c;
    }
    if (first != nullptr) return *first;
    throw InputError(
        "--tokens: no case in the file records an MoE load (valid: a file with a case "
        "of a workload with experts, such as moe, written by this fobench)");
  }
  const CaseResult& c = select_case(file, selector, "--case");
  if (c.experts <= 0) {
    throw InputError("--tokens: case " + c.id + " (workload " + c.workload +
                     ") has no experts; valid: a case of a workload with experts, such as moe");
  }
  if (c.moe_load.empty()) {
    throw InputError("--tokens: case " + c.id +
                     " records no MoE load (its file predates it, or it is one period of a "
                     "simulated ring)");
  }
  return c;
}

}  // namespace

void write_tokens_svg(std::ostream& out, const ResultFile& file, const std::string& case_id) {
  const CaseResult& c = token_case(file, case_id);
  char title[400];
  std::snprintf(title, sizeof title,
                "Tokens routed, case %s (%s %s): experts %lld, top_k %lld, moe_skew %g, "
                "capacity_factor %g, seed %lld, world %d",
                c.id.c_str(), c.workload.c_str(), c.strategy.c_str(),
                static_cast<long long>(c.experts), static_cast<long long>(c.top_k), c.moe_skew,
                c.capacity_factor, static_cast<long long>(c.moe_seed), c.world);
  const std::vector<std::string> subtitles = {
      "cell: the token choices of the source rank's tokens that the destination rank's experts "
      "take (after the capacity's drops); a choice is one of a token's top_k experts"};
  const double header = pictures::header_height(kWidth - 20, title, subtitles, file.system);
  const double matrix_top = header + 30;
  const int64_t n = c.moe_load.world();
  const double side = cell_side(n) * static_cast<double>(n);
  const double table = 36 + 17 * static_cast<double>(std::min<int64_t>(n, 24) + 1);
  const double bars_top = matrix_top + std::max(side, table) + 50;
  const std::vector<std::string> caption = pictures::caption_lines(file.system, {}, kWidth - 20);
  const double caption_top = bars_top + kBarsHeight + 50;
  const double height =
      caption_top + pictures::kCaptionLine * static_cast<double>(caption.size()) + 4;
  svg::Document doc(out, kWidth, height);
  pictures::write_header(doc, 10, kWidth - 20, title, subtitles, file.system);
  write_matrix(doc, c, matrix_top);
  write_rank_table(doc, c, kLeft + side + 40, matrix_top);
  write_expert_bars(doc, c, bars_top);
  pictures::write_caption(doc, 10, caption_top, caption);
  doc.finish();
}

}  // namespace fob
