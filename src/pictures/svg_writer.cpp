#include "svg_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "fob/types.h"

namespace fob::svg {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') {
          out += ' ';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string num(double value) {
  if (!std::isfinite(value)) return "0";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", value);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string attr(const std::string& name, const std::string& value) {
  return " " + name + "=\"" + xml_escape(value) + "\"";
}

std::string attr(const std::string& name, double value) {
  return attr(name, num(value));
}

std::string ms(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g", seconds * 1e3);
  return buf;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || target < 1) return ticks;
  if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo));
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // Integer multiples of the step, so that 0.1 + 0.2 style drift does not show in labels.
  const auto first = static_cast<int64_t>(std::ceil(lo / step - 1e-9));
  const auto last = static_cast<int64_t>(std::floor(hi / step + 1e-9));
  if (last - first > 1000) return ticks;  // a degenerate range, not an axis
  for (int64_t k = first; k <= last; ++k) ticks.push_back(static_cast<double>(k) * step);
  return ticks;
}

std::string tick_label(double value, double step) {
  if (std::fabs(value) < std::fabs(step) * 1e-6) return "0";
  int decimals = 0;
  if (step > 0 && std::isfinite(step)) {
    decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 9), value);
  std::string s = buf;
  if (s.rfind("-0", 0) == 0 && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

Document::Document(std::ostream& out, double width, double height) : out_(out) {
  out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
       << "<svg xmlns=\"http://www.w3.org/2000/svg\"" << attr("width", width)
       << attr("height", height) << attr("viewBox", "0 0 " + num(width) + " " + num(height))
       << " font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
       << "<rect x=\"0\" y=\"0\"" << attr("width", width) << attr("height", height)
       << " fill=\"white\"/>\n";
}

void Document::finish() {
  // An unbalanced open() is a programming error in the picture, not bad input.
  if (!open_.empty()) throw RuntimeFault("svg: <" + open_.back() + "> left open");
  out_ << "</svg>\n";
}

void Document::raw(const std::string& text) {
  out_ << text;
}

void Document::open(const std::string& tag, const std::string& attrs) {
  out_ << "<" << tag << attrs << ">\n";
  open_.push_back(tag);
}

void Document::close(const std::string& tag) {
  if (open_.empty() || open_.back() != tag) throw RuntimeFault("svg: unbalanced </" + tag + ">");
  open_.pop_back();
  out_ << "</" << tag << ">\n";
}

void Document::end_element(const std::string& tag, const std::string& title) {
  if (title.empty()) {
    out_ << "/>\n";
  } else {
    out_ << "><title>" << xml_escape(title) << "</title></" << tag << ">\n";
  }
}

void Document::rect(double x, double y, double w, double h, const std::string& attrs,
                    const std::string& title) {
  out_ << "<rect" << attr("x", x) << attr("y", y) << attr("width", std::max(w, 0.0))
       << attr("height", std::max(h, 0.0)) << attrs;
  end_element("rect", title);
}

void Document::line(double x1, double y1, double x2, double y2, const std::string& attrs,
                    const std::string& title) {
  out_ << "<line" << attr("x1", x1) << attr("y1", y1) << attr("x2", x2) << attr("y2", y2) << attrs;
  end_element("line", title);
}

void Document::text(double x, double y, const std::string& content, const std::string& attrs,
                    const std::string& title) {
  out_ << "<text" << attr("x", x) << attr("y", y) << attrs << ">";
  if (!title.empty()) out_ << "<title>" << xml_escape(title) << "</title>";
  out_ << xml_escape(content) << "</text>\n";
}

void Document::circle(double cx, double cy, double r, const std::string& attrs,
                      const std::string& title) {
  out_ << "<circle" << attr("cx", cx) << attr("cy", cy) << attr("r", r) << attrs;
  end_element("circle", title);
}

void Document::polyline(const std::vector<std::pair<double, double>>& points,
                        const std::string& attrs, const std::string& title) {
  std::string pts;
  for (const auto& [x, y] : points) {
    if (!pts.empty()) pts += ' ';
    pts += num(x);
    pts += ',';
    pts += num(y);
  }
  out_ << "<polyline" << attr("points", pts) << " fill=\"none\"" << attrs;
  end_element("polyline", title);
}

}  // namespace fob::svg
