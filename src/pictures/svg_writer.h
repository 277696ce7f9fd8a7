// The few SVG elements the pictures use, written as text. Every string that came from a results
// file goes through xml_escape, so a label such as "X<0>" or "a&b" cannot break the document.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace fob::svg {

std::string xml_escape(const std::string& text);

// A coordinate or length with two decimals and no trailing zeros: small files, stable output.
std::string num(double value);

// ` name="value"` with the value escaped; attribute lists are concatenations of these.
std::string attr(const std::string& name, const std::string& value);
std::string attr(const std::string& name, double value);

// Milliseconds for people: three significant digits, e.g. "0.0123", "1.23", "123".
std::string ms(double seconds);

// "Nice" tick positions (1, 2 or 5 times a power of ten) covering [lo, hi], about `target` of
// them. Empty when the range is not finite.
std::vector<double> nice_ticks(double lo, double hi, int target);

// Tick label for a value on an axis whose ticks are `step` apart: no more digits than the step
// needs.
std::string tick_label(double value, double step);

// A document being written. The constructor writes the header, finish() the closing tag;
// callers render into a string stream, so an exception midway leaves nothing on disk.
class Document {
 public:
  Document(std::ostream& out, double width, double height);
  void finish();

  // Text inserted verbatim (pattern and marker definitions written by the caller).
  void raw(const std::string& text);
  void open(const std::string& tag, const std::string& attrs = "");
  void close(const std::string& tag);

  // `title` (escaped) becomes a <title> child: the browser's hover tooltip.
  void rect(double x, double y, double w, double h, const std::string& attrs,
            const std::string& title = "");
  void line(double x1, double y1, double x2, double y2, const std::string& attrs,
            const std::string& title = "");
  void text(double x, double y, const std::string& content, const std::string& attrs = "",
            const std::string& title = "");
  void circle(double cx, double cy, double r, const std::string& attrs,
              const std::string& title = "");
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& attrs,
                const std::string& title = "");

 private:
  void end_element(const std::string& tag, const std::string& title);
  std::ostream& out_;
  std::vector<std::string> open_;
};

}  // namespace fob::svg
