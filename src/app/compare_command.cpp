// `fobench compare BASE NEW`: prints the case-by-case comparison (Markdown, CSV or JSON) and
// exits 1 when a case regressed. Needs no MPI: it only reads two files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../io/json_text.h"
#include "commands.h"
#include "fob/compare.h"
#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

enum class Format { md, csv, json };

Format parse_format(const std::string& text) {
  if (text == "md") return Format::md;
  if (text == "csv") return Format::csv;
  if (text == "json") return Format::json;
  throw InputError("--format '" + text + "' is not known; choose md, csv or json");
}

// Values are shown in milliseconds (step times) or GB/s (bandwidth).
double display_scale(CompareMetric m) {
  return m == CompareMetric::busbw ? 1.0 : 1e3;
}
const char* unit(CompareMetric m) {
  return m == CompareMetric::busbw ? "GB/s" : "ms";
}
const char* unit_token(CompareMetric m) {
  return m == CompareMetric::busbw ? "gbps" : "ms";
}

std::string fixed(double v, int decimals, bool sign = false) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.*f" : "%.*f", decimals, v);
  return buf;
}

// Six significant digits: the changes and intervals are percentages of noisy medians.
std::string json_number(double v) {
  return fob::json_number(v, 6);
}

std::string hosts_of(const SystemInfo& s) {
  std::set<std::string> seen;
  std::string out;
  std::stringstream in(s.hostnames);
  std::string host;
  while (std::getline(in, host, ',')) {
    if (seen.insert(host).second) out += (out.empty() ? "" : ",") + host;
  }
  return out.empty() ? "?" : out;
}

struct Side {
  const char* name;
  const std::string& path;
  const ResultFile& file;
};

void write_md_side(std::ostream& out, const Side& side) {
  const SystemInfo& s = side.file.system;
  out << "- " << side.name << ": `" << side.path << "` - machine " << hosts_of(s) << " ("
      << s.world_size << " ranks), backend " << s.backend << ", transport " << s.transport
      << ", link " << s.link_emulation << ", timer " << s.timer << ", git "
      << side.file.run.git_commit << ", created " << side.file.run.created_utc << "\n";
}

std::vector<std::string> key_cells(const CaseKey& k) {
  return {k.workload,
          k.strategy,
          std::to_string(k.batch),
          std::to_string(k.seq),
          std::to_string(k.hidden),
          std::to_string(k.ffn),
          std::to_string(k.heads),
          k.dtype,
          std::to_string(k.world)};
}

const char* kKeyNames[] = {"workload", "strategy", "batch", "seq",  "hidden",
                           "ffn",      "heads",    "dtype", "world"};

const char* verdict_token(Verdict v) {
  switch (v) {
    case Verdict::regressed:
      return "regressed";
    case Verdict::improved:
      return "improved";
    case Verdict::no_change:
      break;
  }
  return "no_change";
}

std::string direction_text(const Comparison& c) {
  const std::string t = fixed(c.threshold_pct, 1);
  return higher_is_worse(c.metric)
             ? "regresses when its whole interval lies above +" + t +
                   "%, improves when it lies below -" + t + "%"
             : "regresses when its whole interval lies below -" + t +
                   "% (a bandwidth drop), improves when it lies above +" + t + "%";
}

const char* resampled(int rounds) {
  return resampled_by_rounds(rounds) ? "rounds" : "iterations";
}

// Empty when both sides were resampled by rounds; else which side was not, and what that costs.
std::string drift_note(const CaseChange& ch) {
  const bool base = !resampled_by_rounds(ch.base_rounds);
  const bool next = !resampled_by_rounds(ch.new_rounds);
  if (!base && !next) return {};
  const std::string fewer = " fewer than " + std::to_string(kMinBootstrapRounds) + " rounds";
  if (base && next) {
    return "BASE and NEW each had" + fewer +
           ", so their iterations were resampled: the interval ignores their run-to-run drift";
  }
  return std::string(base ? "BASE" : "NEW") + " had" + fewer +
         ", so its iterations were resampled: the interval ignores its run-to-run drift";
}

int drift_ignored(const Comparison& c) {
  return static_cast<int>(
      std::count_if(c.changes.begin(), c.changes.end(),
                    [](const CaseChange& ch) { return !drift_note(ch).empty(); }));
}

// Said in every format (on stderr beside csv and json) when a case's interval is narrower than an
// interval over rounds would be.
std::string drift_warning(const Comparison& c) {
  const int n = drift_ignored(c);
  if (n == 0) return {};
  return std::to_string(n) + " case(s) have a side with fewer than " +
         std::to_string(kMinBootstrapRounds) +
         " rounds (a file from before rounds were recorded, or --rounds 1): that side's "
         "iterations were resampled instead, so the interval ignores its run-to-run drift and "
         "may call drift a change";
}

std::string interval_text() {
  return "95% bootstrap interval over rounds (over iterations for a side with fewer than " +
         std::to_string(kMinBootstrapRounds) + " rounds)";
}

std::string rounds_cell(const CaseChange& ch) {
  const auto side = [](int rounds) {
    return std::to_string(rounds) + (resampled_by_rounds(rounds) ? "" : "*");
  };
  return side(ch.base_rounds) + "/" + side(ch.new_rounds);
}

std::string result_line(const Comparison& c) {
  const int regressed = c.count(Verdict::regressed);
  std::string counts = std::to_string(regressed) + " regressed, " +
                       std::to_string(c.count(Verdict::improved)) + " improved, " +
                       std::to_string(c.count(Verdict::no_change)) + " no change";
  if (regressed == 0) return "Result: no regression (" + counts + ")";
  std::string names;
  for (const CaseChange& ch : c.changes) {
    if (ch.verdict == Verdict::regressed) names += "\n  - " + ch.key.text();
  }
  return "Result: REGRESSION (" + counts + "):" + names;
}

void write_md(std::ostream& out, const Comparison& c, const Side& base, const Side& next) {
  const double scale = display_scale(c.metric);
  out << "# fobench compare: " << to_string(c.metric) << " (median over iterations, "
      << unit(c.metric) << "), threshold " << fixed(c.threshold_pct, 1) << "%\n\n";
  write_md_side(out, base);
  write_md_side(out, next);
  for (const SettingDifference& d : setting_differences(base.file.system, next.file.system)) {
    out << "\n**WARNING: the " << d.setting << " differs** (BASE: " << d.base << "; NEW: " << d.next
        << "): " << d.consequence << ".\n";
  }
  out << "\n|";
  for (const char* k : kKeyNames) out << " " << k << " |";
  out << " base " << to_string(c.metric) << " (" << unit(c.metric) << ") | new "
      << to_string(c.metric) << " (" << unit(c.metric)
      << ") | change % | CI low % | CI high % | rounds BASE/NEW | verdict |\n|";
  for (int i = 0; i < 16; ++i) out << (i < 9 || i == 15 ? "---|" : "---:|");
  out << "\n";
  for (const CaseChange& ch : c.changes) {
    out << "|";
    for (const std::string& cell : key_cells(ch.key)) out << " " << cell << " |";
    out << " " << fixed(ch.base_median * scale, 3) << " | " << fixed(ch.new_median * scale, 3)
        << " | " << fixed(ch.change * 100, 1, true) << " | " << fixed(ch.ci_low * 100, 1, true)
        << " | " << fixed(ch.ci_high * 100, 1, true) << " | " << rounds_cell(ch) << " | "
        << to_string(ch.verdict) << " |\n";
  }
  out << "\nA case " << direction_text(c)
      << " (95% bootstrap interval over rounds of median(NEW)/median(BASE) - 1: each of "
      << kBootstrapResamples
      << " resamples draws each file's rounds of the case with replacement and pools their "
         "iterations, so the interval includes the drift between rounds).\n";
  const std::string warning = drift_warning(c);
  if (!warning.empty()) out << "\n**NOTE: " << warning << "** (marked * above).\n";

  auto list = [&out](const char* title, const std::vector<std::string>& items) {
    out << "\n" << title << ":";
    if (items.empty()) out << " none";
    for (const std::string& item : items) out << "\n- " << item;
    out << "\n";
  };
  std::vector<std::string> items;
  for (const UnmatchedCase& u : c.only_base) items.push_back(u.key.text() + " (case " + u.id + ")");
  list("Only in BASE", items);
  items.clear();
  for (const UnmatchedCase& u : c.only_new) items.push_back(u.key.text() + " (case " + u.id + ")");
  list("Only in NEW", items);
  items.clear();
  for (const NotComparable& n : c.not_comparable) items.push_back(n.key.text() + ": " + n.reason);
  list("Not comparable", items);
  if (c.skipped > 0) {
    out << "\nSkipped: " << c.skipped << " matched case(s): " << c.skipped_reason << ".\n";
  }
  out << "\n" << result_line(c) << "\n";
}

void write_csv(std::ostream& out, const Comparison& c) {
  const double scale = display_scale(c.metric);
  const std::string u = unit_token(c.metric);
  for (const char* k : kKeyNames) out << k << ",";
  out << "base_id,new_id,base_median_" << u << ",new_median_" << u
      << ",change_pct,ci_low_pct,ci_high_pct,verdict,base_rounds,new_rounds,base_resampled,"
         "new_resampled,note\n";
  // `rounds`: the four rounds cells, empty for a row that was not compared.
  auto row = [&out](const CaseKey& key, const std::string& base_id, const std::string& new_id,
                    const std::string& numbers, const std::string& verdict,
                    const std::string& rounds, const std::string& note) {
    for (const std::string& cell : key_cells(key)) out << csv_field(cell) << ",";
    out << base_id << "," << new_id << "," << numbers << "," << verdict << "," << rounds << ","
        << csv_field(note) << "\n";
  };
  for (const CaseChange& ch : c.changes) {
    row(ch.key, ch.base_id, ch.new_id,
        json_number(ch.base_median * scale) + "," + json_number(ch.new_median * scale) + "," +
            json_number(ch.change * 100) + "," + json_number(ch.ci_low * 100) + "," +
            json_number(ch.ci_high * 100),
        verdict_token(ch.verdict),
        std::to_string(ch.base_rounds) + "," + std::to_string(ch.new_rounds) + "," +
            resampled(ch.base_rounds) + "," + resampled(ch.new_rounds),
        drift_note(ch));
  }
  const std::string empty = ",,,,", no_rounds = ",,,";
  for (const UnmatchedCase& u2 : c.only_base) {
    row(u2.key, u2.id, "", empty, "only_in_base", no_rounds, "");
  }
  for (const UnmatchedCase& u2 : c.only_new) {
    row(u2.key, "", u2.id, empty, "only_in_new", no_rounds, "");
  }
  for (const NotComparable& n : c.not_comparable) {
    row(n.key, n.base_id, n.new_id, empty, "not_comparable", no_rounds, n.reason);
  }
}

std::string json_key_fields(const CaseKey& k) {
  const std::vector<std::string> cells = key_cells(k);
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    const bool text = i == 0 || i == 1 || i == 7;  // workload, strategy, dtype
    out += std::string(i ? ", " : "") + json_string(kKeyNames[i]) + ": " +
           (text ? json_string(cells[i]) : cells[i]);
  }
  return out;
}

void write_json_side(std::ostream& out, const Side& side) {
  const SystemInfo& s = side.file.system;
  out << "  " << json_string(side.name[0] == 'B' ? "base" : "new")
      << ": {\"file\": " << json_string(side.path) << ", \"hosts\": " << json_string(hosts_of(s))
      << ", \"world_size\": " << s.world_size << ", \"backend\": " << json_string(s.backend)
      << ", \"transport\": " << json_string(s.transport)
      << ", \"link_emulation\": " << json_string(s.link_emulation)
      << ", \"timer\": " << json_string(s.timer)
      << ", \"git_commit\": " << json_string(side.file.run.git_commit)
      << ", \"created_utc\": " << json_string(side.file.run.created_utc) << "},\n";
}

void write_json(std::ostream& out, const Comparison& c, const Side& base, const Side& next) {
  const double scale = display_scale(c.metric);
  out << "{\n  \"metric\": " << json_string(to_string(c.metric))
      << ",\n  \"unit\": " << json_string(unit(c.metric))
      << ",\n  \"threshold_pct\": " << json_number(c.threshold_pct)
      << ",\n  \"confidence\": 0.95,\n  \"resamples\": " << kBootstrapResamples
      << ",\n  \"interval\": " << json_string(interval_text())
      << ",\n  \"min_rounds\": " << kMinBootstrapRounds
      << ",\n  \"drift_ignored\": " << drift_ignored(c) << ",\n";
  write_json_side(out, base);
  write_json_side(out, next);
  out << "  \"link_emulation_differs\": "
      << (base.file.system.link_emulation != next.file.system.link_emulation ? "true" : "false")
      << ",\n  \"timer_differs\": "
      << (base.file.system.timer != next.file.system.timer ? "true" : "false")
      << ",\n  \"cases\": [";
  for (size_t i = 0; i < c.changes.size(); ++i) {
    const CaseChange& ch = c.changes[i];
    out << (i ? ",\n" : "\n") << "    {" << json_key_fields(ch.key)
        << ", \"base_id\": " << json_string(ch.base_id)
        << ", \"new_id\": " << json_string(ch.new_id)
        << ", \"base_median\": " << json_number(ch.base_median * scale)
        << ", \"new_median\": " << json_number(ch.new_median * scale)
        << ", \"change_pct\": " << json_number(ch.change * 100)
        << ", \"ci_low_pct\": " << json_number(ch.ci_low * 100)
        << ", \"ci_high_pct\": " << json_number(ch.ci_high * 100)
        << ", \"base_rounds\": " << ch.base_rounds << ", \"new_rounds\": " << ch.new_rounds
        << ", \"base_resampled\": " << json_string(resampled(ch.base_rounds))
        << ", \"new_resampled\": " << json_string(resampled(ch.new_rounds))
        << ", \"note\": " << json_string(drift_note(ch))
        << ", \"verdict\": " << json_string(verdict_token(ch.verdict)) << "}";
  }
  out << "\n  ],\n";
  auto unmatched = [&out](const char* name, const std::vector<UnmatchedCase>& list) {
    out << "  " << json_string(name) << ": [";
    for (size_t i = 0; i < list.size(); ++i) {
      out << (i ? ", " : "") << "{" << json_key_fields(list[i].key)
          << ", \"id\": " << json_string(list[i].id) << "}";
    }
    out << "],\n";
  };
  unmatched("only_in_base", c.only_base);
  unmatched("only_in_new", c.only_new);
  out << "  \"not_comparable\": [";
  for (size_t i = 0; i < c.not_comparable.size(); ++i) {
    const NotComparable& n = c.not_comparable[i];
    out << (i ? ", " : "") << "{" << json_key_fields(n.key)
        << ", \"base_id\": " << json_string(n.base_id) << ", \"new_id\": " << json_string(n.new_id)
        << ", \"reason\": " << json_string(n.reason) << "}";
  }
  out << "],\n  \"skipped\": " << c.skipped
      << ",\n  \"skipped_reason\": " << json_string(c.skipped_reason)
      << ",\n  \"regressed\": " << c.count(Verdict::regressed)
      << ",\n  \"improved\": " << c.count(Verdict::improved) << "\n}\n";
}

}  // namespace

int compare_command(const CompareArgs& args) {
  return guarded("compare", [&] {
    // Arguments first, so a bad option is reported without reading any file.
    const CompareMetric metric = parse_compare_metric(args.metric);
    const Format format = parse_format(args.format);
    if (!std::isfinite(args.threshold_pct) || args.threshold_pct < 0) {
      throw InputError("--threshold " + fixed(args.threshold_pct, 3) +
                       " is not valid; give a percentage >= 0, e.g. 5");
    }
    const ResultFile base = read_results(args.base);
    const ResultFile next = read_results(args.next);
    if (const std::string why = incomparable_machines(base.system, next.system); !why.empty()) {
      throw InputError(why);
    }
    const Comparison comparison = compare_results(base, next, metric, args.threshold_pct);
    if (comparison.changes.empty()) {
      // A gate that compared nothing would pass whatever NEW measured.
      std::string why = "nothing to compare: BASE holds " + std::to_string(base.cases.size()) +
                        " case(s), NEW " + std::to_string(next.cases.size()) + ", and ";
      why += comparison.skipped > 0
                 ? std::to_string(comparison.skipped) + " matched case(s) were skipped (" +
                       comparison.skipped_reason + ")"
                 : "no case of one matches a case of the other (same workload, strategy, "
                   "shape, dtype and world)";
      if (!comparison.not_comparable.empty()) {
        const NotComparable& first = comparison.not_comparable.front();
        why += "; " + std::to_string(comparison.not_comparable.size()) +
               " matched case(s) could not be compared (first, " + first.key.text() + ": " +
               first.reason + ")";
      }
      throw InputError(why);
    }
    const Side base_side{"BASE", args.base, base};
    const Side new_side{"NEW", args.next, next};
    for (const SettingDifference& d : setting_differences(base.system, next.system)) {
      std::fprintf(stderr, "fobench compare: warning: the %s differs (BASE: %s; NEW: %s): %s\n",
                   d.setting.c_str(), d.base.c_str(), d.next.c_str(), d.consequence.c_str());
    }
    const std::string warning = drift_warning(comparison);
    if (!warning.empty()) std::fprintf(stderr, "fobench compare: note: %s\n", warning.c_str());
    switch (format) {
      case Format::md:
        write_md(std::cout, comparison, base_side, new_side);
        break;
      case Format::csv:
        write_csv(std::cout, comparison);
        break;
      case Format::json:
        write_json(std::cout, comparison, base_side, new_side);
        break;
    }
    std::cout.flush();
    if (format != Format::md) std::fprintf(stderr, "%s\n", result_line(comparison).c_str());
    return comparison.count(Verdict::regressed) > 0 ? kExitVerifyFailed : kExitOk;
  });
}

}  // namespace fob
