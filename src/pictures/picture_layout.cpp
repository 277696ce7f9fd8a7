#include "picture_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fob::pictures {
namespace {

// Advance widths in em of Helvetica/Arial (and their metric twin Liberation Sans) by class of
// character, each class at its widest common member, times a margin for kerning and hinting.
double char_em(unsigned char c) {
  if (c == ' ') return 0.28;
  if (std::strchr("iljI.,:;'|!()[]ft", c)) return 0.34;
  if (c >= '0' && c <= '9') return 0.56;
  if (c == 'm' || c == 'w') return 0.84;
  if (c == 'M' || c == 'W') return 0.95;
  if (c >= 'a' && c <= 'z') return 0.56;
  if (c >= 'A' && c <= 'Z') return 0.73;
  return 0.62;  // punctuation, symbols and any character beyond ASCII (×, –, ≥, …)
}

constexpr double kMargin = 1.06;
constexpr double kTitleFont = 16;
constexpr double kFont = 12;
constexpr double kLineGap = 6;  // between the baselines of two lines, beyond the font size

// A UTF-8 continuation byte adds nothing: a character is counted once, at its lead byte.
bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

}  // namespace

double text_width(const std::string& text, double font_size, bool bold) {
  double em = 0;
  for (unsigned char c : text) {
    if (!continuation(c)) em += char_em(c);
  }
  return std::ceil(em * font_size * kMargin * (bold ? 1.1 : 1.0));
}

std::vector<std::string> wrap(const std::string& text, double width, double font_size) {
  std::vector<std::string> lines;
  std::string line;
  size_t from = 0;
  while (from < text.size()) {
    size_t space = text.find(' ', from);
    if (space == std::string::npos) space = text.size();
    std::string word = text.substr(from, space - from);
    from = space + 1;
    if (word.empty()) continue;
    const std::string joined = line.empty() ? word : line + " " + word;
    if (text_width(joined, font_size) <= width) {
      line = joined;
      continue;
    }
    if (!line.empty()) lines.push_back(line);
    // A word wider than the line (a path, a hash) is cut where it must be.
    while (text_width(word, font_size) > width && word.size() > 1) {
      size_t cut = word.size() - 1;
      while (cut > 1 && (text_width(word.substr(0, cut), font_size) > width ||
                         continuation(static_cast<unsigned char>(word[cut])))) {
        --cut;
      }
      lines.push_back(word.substr(0, cut));
      word.erase(0, cut);
    }
    line = word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

Banner banner(const SystemInfo& system) {
  if (!system.simulated.empty()) {
    // "machine 'NAME' (source); ..." as fobench sim records it: the name is what a reader
    // recognises, the rest goes to the caption.
    std::string name = system.simulated;
    const std::string prefix = "machine '";
    if (name.rfind(prefix, 0) == 0) {
      const size_t end = name.find('\'', prefix.size());
      name = name.substr(prefix.size(), end == std::string::npos ? 40 : end - prefix.size());
    } else {
      name = name.substr(0, std::min<size_t>(name.find_first_of(" ;("), 40));
    }
    return {"SIMULATED with " + name + ": predicted, not measured",
            "Simulated with " + system.simulated};
  }
  if (!system.link_emulated()) return {};
  std::string detail = system.link_emulation;  // "emulated: 10 Gbit/s, 5 us latency (probe)"
  const std::string prefix = "emulated:";
  if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
  while (!detail.empty() && detail.front() == ' ') detail.erase(detail.begin());
  std::string brief = detail.substr(0, std::min(detail.find(" ("), detail.size()));
  if (brief.size() > 60) brief = brief.substr(0, 57) + "...";
  return {"EMULATED link: " + brief,
          "EMULATED link: " + detail +
              ". The times measure the emulation, not this machine's network."};
}

double header_height(double width, const std::string& title,
                     const std::vector<std::string>& subtitles, const SystemInfo& system) {
  double y = 24;
  y += (kFont + kLineGap) * static_cast<double>(wrap(title, width, kTitleFont * 1.1).size() - 1);
  if (!banner(system).line.empty()) y += kFont + kLineGap + 2;
  for (const std::string& s : subtitles) {
    y += (kFont + kLineGap) * static_cast<double>(wrap(s, width, kFont).size());
  }
  return y + 10;
}

double write_header(svg::Document& doc, double x, double width, const std::string& title,
                    const std::vector<std::string>& subtitles, const SystemInfo& system) {
  double y = 24;
  bool first = true;
  for (const std::string& line : wrap(title, width, kTitleFont * 1.1)) {
    if (!first) y += kFont + kLineGap;
    doc.text(x, y, line, " class=\"title\" font-size=\"16\" font-weight=\"bold\"");
    first = false;
  }
  const Banner b = banner(system);
  if (!b.line.empty()) {
    y += kFont + kLineGap + 2;
    doc.text(x, y, b.line, " class=\"emulated\" fill=\"#c00000\" font-weight=\"bold\"", b.detail);
  }
  for (const std::string& s : subtitles) {
    for (const std::string& line : wrap(s, width, kFont)) {
      y += kFont + kLineGap;
      doc.text(x, y, line, " class=\"subtitle\"");
    }
  }
  return y + 10;
}

std::vector<std::string> caption_lines(const SystemInfo& system,
                                       const std::vector<std::string>& notes, double width) {
  std::vector<std::string> lines;
  std::vector<std::string> paragraphs;
  const Banner b = banner(system);
  if (!b.detail.empty()) paragraphs.push_back(b.detail);
  paragraphs.insert(paragraphs.end(), notes.begin(), notes.end());
  for (const std::string& p : paragraphs) {
    for (std::string& line : wrap(p, width, kCaptionFont)) lines.push_back(std::move(line));
  }
  return lines;
}

void write_caption(svg::Document& doc, double x, double y, const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    doc.text(x, y, line, " class=\"caption\" font-size=\"11\" fill=\"#444444\"");
    y += kCaptionLine;
  }
}

double Legend::entry_width(const Entry& e) const {
  const double swatch = e.swatch == Swatch::none ? 0 : e.swatch == Swatch::box ? 20 : 30;
  return swatch + text_width(e.label, kFont) + 18;
}

double Legend::widest() const {
  double w = 0;
  for (const Entry& e : entries_) w = std::max(w, entry_width(e));
  return w;
}

double Legend::height() const {
  if (entries_.empty()) return 0;
  double rows = 1, x = 0;
  for (const Entry& e : entries_) {
    const double w = entry_width(e);
    if (x > 0 && (stacked_ || x + w > width_)) {
      ++rows;
      x = 0;
    }
    x += w;
  }
  return rows * kRow;
}

// y is the first row's baseline.
void Legend::write(svg::Document& doc, double x0, double y) const {
  doc.open("g", " class=\"legend\"");
  double x = x0;
  for (const Entry& e : entries_) {
    const double w = entry_width(e);
    if (x > x0 && (stacked_ || x - x0 + w > width_)) {
      x = x0;
      y += kRow;
    }
    doc.open("g", svg::attr("class", "legend-entry") + svg::attr("data-for", e.key));
    double tx = x;
    if (e.swatch == Swatch::box) {
      doc.rect(x, y - 10, 14, 12, e.attrs);
      tx += 20;
    } else if (e.swatch != Swatch::none) {
      doc.line(x, y - 4, x + 22, y - 4, e.attrs);
      if (e.swatch == Swatch::line_dot) doc.circle(x + 11, y - 4, 3.5, e.dot);
      tx += 30;
    }
    doc.text(tx, y, e.label, e.swatch == Swatch::none ? e.attrs : "");
    doc.close("g");
    x += w;
  }
  doc.close("g");
}

}  // namespace fob::pictures
