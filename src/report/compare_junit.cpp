// `fobench compare --format junit`: the comparison as JUnit XML, the report CI servers read
// (Jenkins, GitLab, GitHub's test reporters): one test case per compared case, a regression a
// <failure>, an inconclusive case <skipped> (or as --inconclusive-as says), a case NEW lacks a
// <failure> of type missing, one that could not be compared an <error>; the gate's verdict,
// reason and exit code as properties of the suite.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "core/json_text.h"
#include "fob/compare.h"
#include "fob/compare_report.h"
#include "pictures/svg_writer.h"

namespace fob {
namespace {

// Every text from a file made valid UTF-8 on one line, then escaped for an attribute.
std::string x(const std::string& text) {
  return svg::xml_escape(one_line_text(text));
}

std::string pct(double v) {
  if (!std::isfinite(v)) return "nan";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.1f", v);
  return buf;
}

// The change with its interval, in the metric's change unit.
std::string change_text(const Comparison& c, const CaseChange& ch) {
  const bool ms = ch.absolute;
  const double k = ms ? 1e3 : 100.0;
  const std::string unit = ms ? " ms" : "%";
  std::string text = pct(ch.change * k) + unit;
  if (std::isfinite(ch.ci_low)) {
    text += " (95% interval " + pct(ch.ci_low * k) + ".." + pct(ch.ci_high * k) + unit + ")";
  }
  return text + ", threshold " + pct(c.threshold_pct).substr(1) + "%, rounds " +
         std::to_string(ch.base_rounds) + "/" + std::to_string(ch.new_rounds);
}

struct JunitCase {
  std::string name;
  std::string outcome;  // "", "failure", "error" or "skipped"
  std::string type, message;
};

// "regressed", "no_change", "too_few_rounds": the verdict as CSV and JSON name it.
std::string token(Verdict v) {
  std::string t = to_string(v);
  for (char& ch : t) ch = ch == ' ' ? '_' : static_cast<char>(std::tolower(ch));
  return t;
}

JunitCase judged(const Comparison& c, const CaseChange& ch) {
  JunitCase j{ch.key.text(), "", token(ch.verdict), ""};
  const std::string text = std::string(to_string(ch.verdict)) + ": " + change_text(c, ch);
  const bool unsure = ch.verdict == Verdict::inconclusive || ch.verdict == Verdict::too_few_rounds;
  if (ch.verdict == Verdict::regressed) {
    j.outcome = "failure";
  } else if (unsure && c.inconclusive_as == InconclusiveAs::fail) {
    j.outcome = "failure";
  } else if (unsure && c.inconclusive_as == InconclusiveAs::inconclusive) {
    j.outcome = "skipped";
  }
  j.message = text;
  return j;
}

std::vector<JunitCase> junit_cases(const std::vector<Comparison>& parts) {
  std::vector<JunitCase> out;
  for (const Comparison& part : parts) {
    for (const CaseChange& ch : part.changes) {
      JunitCase j = judged(part, ch);
      if (parts.size() > 1) {
        j.name = std::string(to_string(part.metric)) + " of " + j.name;
        j.message += "; this figure " + std::string(to_string(part.role));
      }
      // A figure shown beside passes whatever its verdict; the message carries it.
      if (part.role != GateRole::decides) j.outcome = "";
      out.push_back(j);
    }
  }
  const Comparison& c = parts.front();
  for (const UnmatchedCase& u : c.only_base) {
    out.push_back({u.key.text(), "failure", "missing",
                   "in BASE (case " + u.id + "), missing from NEW: NEW was not held to it"});
  }
  for (const NotComparable& n : c.not_comparable) {
    out.push_back({n.key.text(), "error", "not_comparable", n.reason});
  }
  for (const UnmatchedCase& u : c.only_new) {
    out.push_back({u.key.text(), "skipped", "only_in_new",
                   "only in NEW (case " + u.id + "): nothing to hold it to"});
  }
  return out;
}

void property(std::ostream& out, const std::string& name, const std::string& value) {
  out << "      <property name=\"" << x(name) << "\" value=\"" << x(value) << "\"/>\n";
}

}  // namespace

void write_compare_junit(std::ostream& out, const std::vector<Comparison>& parts,
                         const CompareSide& base, const CompareSide& next) {
  const Comparison& c = parts.front();
  const std::vector<JunitCase> cases = junit_cases(parts);
  int failures = 0, errors = 0, skipped = 0;
  for (const JunitCase& j : cases) {
    failures += j.outcome == "failure" ? 1 : 0;
    errors += j.outcome == "error" ? 1 : 0;
    skipped += j.outcome == "skipped" ? 1 : 0;
  }
  const std::string counts = " tests=\"" + std::to_string(cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
                             "\" skipped=\"" + std::to_string(skipped) + "\"";
  const std::string suite =
      std::string("fobench compare ") + (parts.size() > 1 ? "interconnect" : to_string(c.metric));
  const GateResult g = gate_result(parts, c.inconclusive_as);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"" << x(suite) << "\"" << counts << ">\n";
  out << "  <testsuite name=\"" << x(suite) << "\"" << counts << ">\n";
  out << "    <properties>\n";
  property(out, "gate", to_string(g.verdict));
  property(out, "gate_reason", g.reason);
  property(out, "exit_code", std::to_string(g.exit_code));
  property(out, "metric", to_string(c.metric));
  property(out, "threshold_pct", pct(c.threshold_pct).substr(1));
  property(out, "base_file", base.path);
  property(out, "new_file", next.path);
  property(out, "base_link_emulation", base.file.system.link_emulation);
  property(out, "new_link_emulation", next.file.system.link_emulation);
  out << "    </properties>\n";
  for (const JunitCase& j : cases) {
    out << "    <testcase classname=\"" << x(suite) << "\" name=\"" << x(j.name) << "\"";
    if (j.outcome.empty()) {
      out << ">\n      <system-out>" << x(j.message) << "</system-out>\n    </testcase>\n";
      continue;
    }
    out << ">\n      <" << j.outcome;
    // JUnit's <skipped> carries a message only; <failure> and <error> a type as well.
    if (j.outcome != "skipped") out << " type=\"" << x(j.type) << "\"";
    out << " message=\"" << x(j.message) << "\"/>\n    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace fob
