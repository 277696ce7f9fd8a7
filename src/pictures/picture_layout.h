// Layout that every picture shares: how wide a text is, where long text wraps, the short banner
// of a run that was not measured over a real link, the caption that carries its detail, and a
// legend that never runs off the canvas. Widths are estimates (no font is measured when the SVG
// is written): they err wide, so a browser's real text fits where the estimate did.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fob/results.h"
#include "svg_writer.h"

namespace fob::pictures {

// The width of `text` at `font_size` px in a Helvetica/Arial-like font, rounded up.
double text_width(const std::string& text, double font_size, bool bold = false);

// `text` broken at spaces into lines no wider than `width` (a word wider than that is cut).
std::vector<std::string> wrap(const std::string& text, double width, double font_size);

// What makes a picture's times other than measured over this machine's network, in a few words
// for the banner ("SIMULATED with h100_nvlink_ib: predicted, not measured", "EMULATED link:
// 10 Gbit/s, 5 us latency"), and in full for the tooltip and the caption. Both empty for a
// measurement over a real link.
struct Banner {
  std::string line;
  std::string detail;
};
Banner banner(const SystemInfo& system);

// The title, the banner (with its detail as a tooltip) and wrapped subtitle lines, from y = 0
// down; returns the y below them. `width` is the room from x to the canvas's right edge.
double write_header(svg::Document& doc, double x, double width, const std::string& title,
                    const std::vector<std::string>& subtitles, const SystemInfo& system);
// The height write_header takes, for laying out before the document exists.
double header_height(double width, const std::string& title,
                     const std::vector<std::string>& subtitles, const SystemInfo& system);

// The banner's detail and `notes`, wrapped to `width`: the lines a caption at the picture's foot
// shows. write_caption draws them from y on, one per kCaptionLine.
inline constexpr double kCaptionLine = 15;
inline constexpr double kCaptionFont = 11;
std::vector<std::string> caption_lines(const SystemInfo& system,
                                       const std::vector<std::string>& notes, double width);
void write_caption(svg::Document& doc, double x, double y, const std::vector<std::string>& lines);

// A legend: entries flow left to right and wrap at `width`, or stack one per row. Each entry
// is drawn as <g class="legend-entry" data-for="KEY">: KEY is the data-mark of the marks it
// explains, which is how a reader (and the browser test) pairs the two.
class Legend {
 public:
  enum class Swatch { box, line, line_dot, none };
  struct Entry {
    std::string key;
    Swatch swatch = Swatch::box;
    std::string attrs;  // the swatch's fill or stroke attributes; for none, the label's
    std::string label;
    std::string dot;  // line_dot: the dot's attributes
  };

  Legend(double width, bool stacked) : width_(width), stacked_(stacked) {}
  void add(std::string key, Swatch swatch, std::string attrs, std::string label,
           std::string dot = "") {
    entries_.push_back(
        {std::move(key), swatch, std::move(attrs), std::move(label), std::move(dot)});
  }
  bool empty() const { return entries_.empty(); }
  // The widest entry, and the height all of them take laid out in `width`.
  double widest() const;
  double height() const;
  void write(svg::Document& doc, double x, double y) const;

 private:
  static constexpr double kRow = 20;
  double entry_width(const Entry& e) const;
  double width_;
  bool stacked_;
  std::vector<Entry> entries_;
};

}  // namespace fob::pictures
