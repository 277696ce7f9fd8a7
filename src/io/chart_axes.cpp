#include "chart_axes.h"

#include <vector>

#include "pictures_common.h"

namespace fob::charts {

using svg::attr;

void write_title(svg::Document& doc, double x, const std::string& title, const ResultFile& file) {
  doc.text(x, 24, title, " font-size=\"16\" font-weight=\"bold\"");
  const std::string note = pictures::emulated_note(file.system);
  if (!note.empty()) {
    doc.text(x, 44, note, " class=\"emulated\" fill=\"#c00000\" font-weight=\"bold\"");
  }
}

void write_y_axis(svg::Document& doc, const Scale& y, double left, double right,
                  const std::string& label) {
  const std::vector<double> ticks = svg::nice_ticks(y.lo, y.hi, 6);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  doc.open("g", " class=\"axis\"");
  for (double t : ticks) {
    if (t < y.lo - 1e-12 || t > y.hi + 1e-12) continue;
    doc.line(left, y(t), right, y(t), " class=\"grid\" stroke=\"#e4e4e4\"");
    doc.text(left - 6, y(t) + 4, svg::tick_label(t, step), " text-anchor=\"end\"");
  }
  doc.line(left, y.from, left, y.to, " stroke=\"black\"");
  const double mid = (y.from + y.to) / 2;
  doc.text(left - 48, mid, label,
           " text-anchor=\"middle\"" +
               attr("transform", "rotate(-90 " + svg::num(left - 48) + " " + svg::num(mid) + ")"));
  doc.close("g");
}

}  // namespace fob::charts
