// `fobench compare`: two results files case by case, with a confidence interval of each case's
// change, so that run-to-run noise is not reported as a regression. The interval is a rank-based
// (Hodges-Lehmann) interval over the rounds' medians (--rounds): iterations of one round ran back
// to back and share its phase of the machine, so only the spread between rounds shows how far a run
// drifts, and an interval from a handful of rounds is as wide as a handful of values warrants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fob/results.h"

namespace fob {

enum class CompareMetric { t, exposed_comm, busbw };
CompareMetric parse_compare_metric(const std::string& text);  // InputError naming the choices
const char* to_string(CompareMetric metric);
// Whether a larger value is worse (step times) or better (bandwidth).
bool higher_is_worse(CompareMetric metric);

// no_change: the interval lies within +-threshold; regressed / improved: wholly past it on one
// side; inconclusive: neither (the files cannot tell a threshold-sized change from noise);
// too_few_rounds: a side has fewer than kMinCompareRounds rounds, too few to judge at all;
// no_regression: the interval reaches past the threshold on the better side only, so a change
// for the worse past it is ruled out (what a gate asks) though no change is not proven.
enum class Verdict { no_change, regressed, improved, inconclusive, too_few_rounds, no_regression };
const char* to_string(Verdict verdict);

struct CaseChange {
  CaseKey key;
  std::string base_id, new_id;
  double base_median = 0, new_median = 0;  // the metric's unit: seconds or GB/s
  // median(new) / median(base) - 1; for a metric that can cross zero (exposed_comm,
  // `absolute`), median(new) - median(base) in the metric's unit instead, judged against the
  // threshold as a share of the base case's step time T.
  double change = 0;
  double ci_low = 0, ci_high = 0;  // 95% interval of `change` (round_change)
  bool absolute = false;
  double threshold = 0;   // what `change` is judged against, in its unit
  double detectable = 0;  // the interval's half-width: smaller changes are lost in the noise
  // Rounds per side that would narrow the interval to +-threshold (the half-width shrinks as
  // one over the square root of the rounds); 0 when it is narrow enough already.
  int rounds_needed = 0;
  // The rounds with a value on each side; fewer than kMinCompareRounds is too few to judge.
  int base_rounds = 0, new_rounds = 0;
  // Rounds left out on each side because their slot ran in a slow phase of the machine (its
  // speed probe past kSlowPhaseFactor times the file's median probe, or its own median past
  // kSlowRoundFactor times the case's lower quartile), while they were a minority and enough
  // others remained: named, not averaged in.
  int base_slow = 0, new_slow = 0;
  Verdict verdict = Verdict::no_change;
};

// The gate's answer for CI: PASS (exit 0), FAIL (1: a case regressed), MISSING (6: NEW lacks
// cases BASE has, never a pass), INCONCLUSIVE (5: a case's interval reaches past the threshold,
// or a side has too few rounds), each with its reason in one line. --inconclusive-as maps
// INCONCLUSIVE to pass or fail for a job that must decide.
enum class GateVerdict { pass, fail, missing, inconclusive };
enum class InconclusiveAs { inconclusive, pass, fail };
// InputError naming --inconclusive-as, the value and the choices.
InconclusiveAs parse_inconclusive_as(const std::string& text);
const char* to_string(GateVerdict verdict);

// What one part of a gate does to its verdict: decides (each case must clear the threshold) or
// reported (shown beside with its verdicts, never deciding).
enum class GateRole { decides, reported };
const char* to_string(GateRole role);

// all: every case's metric (--metric) decides. interconnect: what the link decides — comm_only's
// busbw per message size decides; the overlapping strategies' exposed communication and every
// case's T are shown beside (compute cases' noise, and the compute's drift between runs that
// exposed_comm carries, decide nothing).
enum class GateMode { all, interconnect };

struct UnmatchedCase {
  CaseKey key;
  std::string id;
};

struct NotComparable {
  CaseKey key;
  std::string base_id, new_id;
  std::string reason;
};

struct Comparison {
  CompareMetric metric = CompareMetric::t;
  double threshold_pct = 5;
  std::vector<CaseChange> changes;
  std::vector<UnmatchedCase> only_base, only_new;
  std::vector<NotComparable> not_comparable;
  // Matched cases the metric does not apply to (references for exposed_comm, everything but
  // comm_only for busbw), with why.
  int skipped = 0;
  std::string skipped_reason;
  // What the gate's INCONCLUSIVE counts as (compare's --inconclusive-as).
  InconclusiveAs inconclusive_as = InconclusiveAs::inconclusive;
  GateRole role = GateRole::decides;  // in a gate of several parts (gate_parts)
  // Each file's median host speed probe (speed_probe.h), NaN where none was recorded: how fast
  // the machine ran while each file was measured.
  double base_probe = 0, new_probe = 0;
  // NEW's median probe over BASE's, reported only: between two runs on an idle machine it moved
  // by 1.4x, so it does not judge; NaN where unknown.
  double host_speed_ratio() const { return new_probe / base_probe; }
  // Each file's median over its cases of the host CPUs other work kept busy while it ran
  // (the facts' host_others_cpus), NaN where not recorded.
  double base_load = 0, new_load = 0;

  int count(Verdict verdict) const;
};

// A side needs this many rounds for its case to be judged: with fewer, the spread between
// rounds (what a run's drift is measured by) is one value or none.
inline constexpr int kMinCompareRounds = 3;

struct Interval {
  double low = 0, high = 0;
};

// Each round's samples of one case.
using Rounds = std::vector<std::vector<double>>;

// The change of `next` against `base` and its 95% interval, from each side's round medians: the
// Hodges-Lehmann estimate (the median of every NEW-minus-BASE difference of round medians, on
// the log scale and returned as a ratio minus 1), with the Mann-Whitney interval between those
// differences' order statistics, or with `difference` on the values themselves (exposed_comm,
// which crosses zero). The interval is never narrower than what the iterations' spread within
// rounds (and `extra_variance`) gives, so rounds whose medians happen to agree do not make an
// interval of width 0. Each side needs 2 rounds with a positive (for a ratio) median; else the
// interval is NaN.
struct RoundChange {
  double change = 0;
  Interval ci;
};
// `extra_variance` (in the values' unit squared, with `difference`) is added to the standard
// error's square: a subtracted reference's own uncertainty (exposed_comm's T_comp).
RoundChange round_change(const Rounds& base, const Rounds& next, bool difference = false,
                         double extra_variance = 0);

// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1; 1.96 as df grows).
double student_t_975(double df);

// A setting that differs between the two files, so that a change measures more than the code.
struct SettingDifference {
  std::string setting;      // "link emulation", "timer", "transport"
  std::string base, next;   // the two files' values
  std::string consequence;  // what the difference means for the comparison
};

// The differences `fobench compare` warns about, transport and link emulation first; empty when
// none. A file that predates the timer attribute differs from every file that names its timer:
// which clock took its times is unknown.
std::vector<SettingDifference> setting_differences(const SystemInfo& base, const SystemInfo& next);

// Why the two files' times cannot be compared at all (one measured on the cuda model, whose
// times are the CPU's, the other not), or empty.
std::string incomparable_machines(const SystemInfo& base, const SystemInfo& next);

// Why two measured files' times measure different mechanisms: they moved their data with
// different transports (/system transport: nccl, ce, mpi), or empty. Simulated files are left
// to the rules for predictions (is_prediction_pair) and simulations.
std::string incomparable_transports(const SystemInfo& base, const SystemInfo& next);

struct GateResult {
  GateVerdict verdict = GateVerdict::pass;
  std::string reason;  // one line
  int exit_code = 0;
};
GateResult gate_result(const Comparison& comparison, InconclusiveAs inconclusive_as);
// Over a gate's parts: FAIL when a deciding part regressed, MISSING when NEW lacks a case,
// INCONCLUSIVE when a deciding part is unsure, else PASS.
GateResult gate_result(const std::vector<Comparison>& parts, InconclusiveAs inconclusive_as);

// Empty, or a warning that either file was measured while other work kept kBusyHostCpus or more
// of the host's CPUs busy (named, with how many).
std::string host_speed_note(const Comparison& comparison);

// "all" or "interconnect"; InputError naming --gate, the value and the choices ("auto" is the
// command's, resolved by gate_of_files).
GateMode parse_gate_mode(const std::string& text);
// What both files' configs ask for (the `gate` key): interconnect when both say so, else all;
// `note` says why when they disagree.
GateMode gate_of_files(const ResultFile& base, const ResultFile& next, std::string* note);
// The gate's comparisons: one (the metric, deciding) for all; for interconnect busbw
// (decides), exposed_comm and T (reported).
std::vector<Comparison> gate_parts(const ResultFile& base, const ResultFile& next, GateMode mode,
                                   CompareMetric metric, double threshold_pct);

// The median of every speed probe a file recorded (speed_probe.h); NaN where none.
double median_probe(const ResultFile& file);
// The median over a file's cases of the host CPUs other work kept busy (host_others_cpus in
// the case's facts); NaN where none was recorded.
double median_host_load(const ResultFile& file);

// Judges `c`'s interval again against `threshold` (in its unit: a fraction, or seconds where
// absolute): a history's tolerance (compare_history.h) may be wider than --threshold.
void rejudge(CaseChange& c, CompareMetric metric, double threshold);

// Throws InputError for a negative or non-finite threshold.
Comparison compare_results(const ResultFile& base, const ResultFile& next, CompareMetric metric,
                           double threshold_pct);

// A case measured in one file and predicted by `fobench sim` in the other.
struct Prediction {
  CaseKey key;
  double measured = 0, predicted = 0;  // median step times, seconds
  double error = 0;                    // predicted / measured - 1
};

struct PredictionCheck {
  std::string machine;  // the machine file the simulated file names
  std::vector<Prediction> cases;
  std::vector<UnmatchedCase> only_measured, only_predicted;
};

// Whether exactly one of the two files is simulated: compare then checks the prediction.
bool is_prediction_pair(const ResultFile& base, const ResultFile& next);
// Every case of `measured` with its prediction in `simulated`, matched by key.
PredictionCheck compare_predictions(const ResultFile& measured, const ResultFile& simulated);

}  // namespace fob
