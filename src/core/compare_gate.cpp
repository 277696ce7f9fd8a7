// The gate's answer (fob/compare.h): PASS, FAIL, MISSING or INCONCLUSIVE over one comparison or
// the parts of a gate (all: one metric; interconnect: what the link decides), each with its
// reason in one line and its exit status, and the gate a pair of files asks for.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "fob/compare.h"
#include "fob/config.h"
#include "fob/speed_probe.h"
#include "fob/types.h"

namespace fob {

InconclusiveAs parse_inconclusive_as(const std::string& text) {
  if (text == "inconclusive") return InconclusiveAs::inconclusive;
  if (text == "pass") return InconclusiveAs::pass;
  if (text == "fail") return InconclusiveAs::fail;
  throw InputError("--inconclusive-as " + quote_value(text) +
                   " is not known; choose inconclusive (exit 5, the default), pass (exit 0) or "
                   "fail (exit 1)");
}

const char* to_string(GateVerdict verdict) {
  switch (verdict) {
    case GateVerdict::pass:
      return "PASS";
    case GateVerdict::fail:
      return "FAIL";
    case GateVerdict::missing:
      return "MISSING";
    case GateVerdict::inconclusive:
      return "INCONCLUSIVE";
  }
  return "?";
}

namespace {

// "a, b and 3 more": the first cases' names.
std::string first_names(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i == 0 ? "" : "; ") + names[i];
  if (names.size() > shown) out += "; and " + std::to_string(names.size() - shown) + " more";
  return out;
}

std::vector<std::string> cases_with(const Comparison& c, Verdict v) {
  std::vector<std::string> out;
  for (const CaseChange& ch : c.changes) {
    if (ch.verdict == v) out.push_back(ch.key.text());
  }
  return out;
}

}  // namespace

namespace {

int inconclusive_exit(InconclusiveAs as) {
  if (as == InconclusiveAs::pass) return kExitOk;
  return as == InconclusiveAs::fail ? kExitVerifyFailed : kExitInconclusive;
}

}  // namespace

std::string host_speed_note(const Comparison& c) {
  // The speed probe's median is not compared across files: between two runs on an idle machine
  // it moved by 1.4x (the CPU's clock and caches), where within a run it marks a slow phase.
  std::string note;
  const double most = std::max(std::isfinite(c.base_load) ? c.base_load : 0,
                               std::isfinite(c.new_load) ? c.new_load : 0);
  if (most >= kBusyHostCpus) {
    const auto cpus = [](double v) {
      char n[32];
      std::snprintf(n, sizeof n, "%.2f", v);
      return std::isfinite(v) ? std::string(n) : std::string("(not recorded)");
    };
    note += std::string(note.empty() ? "" : "; ") + "the host was busy with other work: it kept " +
            cpus(c.base_load) + " of its CPUs busy while BASE ran and " + cpus(c.new_load) +
            " while NEW ran";
  }
  if (note.empty()) return note;
  return note + ", so a change measures the machine as well as the link";
}

namespace {

// Whether other work could have made NEW slower than BASE: it kept half a CPU or more busy while
// NEW ran, and NEW's host was not clearly (by that half CPU) the less busy. Where BASE ran the
// busier, the load slowed BASE: it hides a regression, never makes one, and what got worse past
// the threshold got worse. Two loads about alike slow both sides, but not by the same amount.
bool load_could_explain_regression(const Comparison& c) {
  const double base = std::isfinite(c.base_load) ? c.base_load : 0;
  const double next = std::isfinite(c.new_load) ? c.new_load : 0;
  return next >= kBusyHostCpus && next + kBusyHostCpus > base;
}

}  // namespace

GateResult gate_result(const Comparison& c, InconclusiveAs inconclusive_as) {
  return gate_result(std::vector<Comparison>{c}, inconclusive_as);
}

GateResult gate_result(const std::vector<Comparison>& parts, InconclusiveAs inconclusive_as) {
  const double threshold = parts.empty() ? 0 : parts.front().threshold_pct;
  const std::string t = std::to_string(static_cast<int>(std::lround(threshold)));
  std::vector<std::string> regressed, few, wide, missing;
  size_t judged = 0;
  for (const Comparison& c : parts) {
    const std::string of = parts.size() > 1 ? std::string(to_string(c.metric)) + " of " : "";
    const auto add = [&](std::vector<std::string>& to, Verdict v) {
      for (const std::string& name : cases_with(c, v)) to.push_back(of + name);
    };
    if (c.role != GateRole::decides) continue;
    add(regressed, Verdict::regressed);
    judged += c.changes.size();
    add(few, Verdict::too_few_rounds);
    add(wide, Verdict::inconclusive);
    if (missing.empty()) {
      for (const UnmatchedCase& u : c.only_base) missing.push_back(u.key.text());
    }
  }
  // Two files measured while other work loaded the machine cannot tell a slower link from a
  // slower machine: a regression then is not a FAIL, unless the load was BASE's. Cases NEW lacks
  // are certain, so MISSING outranks such a doubt.
  const std::string machine = parts.empty() ? "" : host_speed_note(parts.front());
  const bool load_explains =
      !regressed.empty() && !machine.empty() && load_could_explain_regression(parts.front());
  if (!regressed.empty() && !load_explains) {
    return {GateVerdict::fail,
            std::to_string(regressed.size()) + " case(s) regressed past " + t +
                "% (their whole interval): " + first_names(regressed),
            kExitVerifyFailed};
  }
  if (!missing.empty()) {
    return {GateVerdict::missing,
            "NEW lacks " + std::to_string(missing.size()) +
                " case(s) that BASE has: " + first_names(missing),
            kExitMissingCases};
  }
  if (load_explains) {
    GateResult g;
    g.verdict = GateVerdict::inconclusive;
    g.reason = std::to_string(regressed.size()) + " case(s) got worse, but " + machine +
               ": rerun both on an idle machine; " + first_names(regressed);
    g.exit_code = inconclusive_exit(inconclusive_as);
    return g;
  }
  if (!few.empty() || !wide.empty()) {
    GateResult g;
    g.verdict = GateVerdict::inconclusive;
    g.reason =
        !few.empty()
            ? std::to_string(few.size()) + " case(s) have fewer than " +
                  std::to_string(kMinCompareRounds) +
                  " rounds on a side, too few to judge (run with --rounds 10): " + first_names(few)
            : std::to_string(wide.size()) + " case(s) have an interval reaching past +-" + t +
                  "%: the files could not have seen such a change (more rounds "
                  "narrow it; see `rounds needed`" +
                  // A loaded machine widens intervals: what to change is the machine.
                  (machine.empty() ? std::string() : ", or an idle machine: " + machine) +
                  "): " + first_names(wide);
    g.exit_code = inconclusive_exit(inconclusive_as);
    return g;
  }
  return {GateVerdict::pass,
          std::to_string(judged) + " case(s) cleared: none could have got worse by more than " + t +
              "% (each interval's worse end within it), none missing",
          kExitOk};
}

const char* to_string(GateRole role) {
  switch (role) {
    case GateRole::decides:
      return "decides";
    case GateRole::reported:
      return "shown beside, not deciding";
  }
  return "?";
}

GateMode parse_gate_mode(const std::string& text) {
  if (text == "all") return GateMode::all;
  if (text == "interconnect") return GateMode::interconnect;
  throw InputError("--gate " + quote_value(text) +
                   " is not known; choose auto (what both files' configs say, the default), all "
                   "(every case's --metric) or interconnect (comm_only busbw decides, exposed "
                   "communication and T shown beside)");
}

namespace {

// The `gate` key of a file's config, "" when it has none or the text does not parse.
std::string config_gate(const ResultFile& f) {
  try {
    const YAML::Node root = YAML::Load(f.run.config_yaml);
    if (root.IsMap() && root["gate"] && root["gate"].IsScalar()) {
      return root["gate"].as<std::string>();
    }
  } catch (const std::exception&) {
  }
  return "";
}

}  // namespace

GateMode gate_of_files(const ResultFile& base, const ResultFile& next, std::string* note) {
  const std::string b = config_gate(base), n = config_gate(next);
  if (b == "interconnect" && n == "interconnect") return GateMode::interconnect;
  if ((b == "interconnect") != (n == "interconnect") && note != nullptr) {
    *note = "BASE's config asks for the " + (b.empty() ? std::string("all") : b) +
            " gate and NEW's for the " + (n.empty() ? std::string("all") : n) +
            ": judged by all (give --gate to choose)";
  }
  return GateMode::all;
}

std::vector<Comparison> gate_parts(const ResultFile& base, const ResultFile& next, GateMode mode,
                                   CompareMetric metric, double threshold_pct) {
  if (mode == GateMode::all) return {compare_results(base, next, metric, threshold_pct)};
  std::vector<Comparison> parts = {
      compare_results(base, next, CompareMetric::busbw, threshold_pct),
      compare_results(base, next, CompareMetric::exposed_comm, threshold_pct),
      compare_results(base, next, CompareMetric::t, threshold_pct)};
  // exposed_comm = T - T_comp carries the compute's drift between two runs, which on a shared
  // machine is larger than a link change the gate must catch (two runs of one setting of
  // interconnect_cpu.yaml: false regressions in 2 of 3 pairs): shown beside, with its verdict.
  parts[1].role = GateRole::reported;
  parts[2].role = GateRole::reported;
  return parts;
}

}  // namespace fob
