// `fobench compare`: two results files case by case, with a bootstrap confidence interval of
// each case's relative change, so that run-to-run noise is not reported as a regression. The
// bootstrap resamples whole rounds (--rounds): iterations of one round ran back to back and share
// its phase of the machine, so only the spread between rounds shows how far a run drifts.
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
// side; inconclusive: neither (the files cannot tell a threshold-sized change from noise).
enum class Verdict { no_change, regressed, improved, inconclusive };
const char* to_string(Verdict verdict);

struct CaseChange {
  CaseKey key;
  std::string base_id, new_id;
  double base_median = 0, new_median = 0;  // the metric's unit: seconds or GB/s
  // median(new) / median(base) - 1; for a metric that can cross zero (exposed_comm,
  // `absolute`), median(new) - median(base) in the metric's unit instead, judged against the
  // threshold as a share of the base case's step time T.
  double change = 0;
  double ci_low = 0, ci_high = 0;  // 95% bootstrap interval of `change`
  bool absolute = false;
  double threshold = 0;   // what `change` is judged against, in its unit
  double detectable = 0;  // the interval's half-width: smaller changes are lost in the noise
  // Rounds per side that would narrow the interval to +-threshold (the half-width shrinks as
  // one over the square root of the rounds); 0 when it is narrow enough already.
  int rounds_needed = 0;
  // The rounds with a value on each side. A side with fewer than kMinBootstrapRounds was
  // resampled by iterations instead, so the interval misses that side's run-to-run drift.
  int base_rounds = 0, new_rounds = 0;
  Verdict verdict = Verdict::no_change;
};

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

  int count(Verdict verdict) const;
};

// Samples are bootstrapped this many times, with this seed, so the output is the same on every
// run of the same two files.
inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x5eedf0b5u;
// Fewer rounds than this cannot show a spread between rounds: such a side (a file from before
// rounds were recorded, or --rounds 1) is resampled by its iterations.
inline constexpr int kMinBootstrapRounds = 2;

// Whether a side with `rounds` rounds is resampled by rounds (else by iterations).
inline bool resampled_by_rounds(int rounds) {
  return rounds >= kMinBootstrapRounds;
}

struct Interval {
  double low = 0, high = 0;
};

// Samples grouped into the units a bootstrap draws whole: a case's rounds, or single samples.
using SampleClusters = std::vector<std::vector<double>>;

// 95% percentile interval of median(next) / median(base) - 1 by a cluster bootstrap: each
// resample draws as many clusters as a side has, with replacement and independently per side,
// and takes the median of all the samples of the drawn clusters. Both sides need a non-empty
// cluster.
// With `difference`, the interval of median(next) - median(base) instead.
Interval cluster_bootstrap_change(const SampleClusters& base, const SampleClusters& next,
                                  int resamples = kBootstrapResamples,
                                  uint64_t seed = kBootstrapSeed, bool difference = false);

// A setting that differs between the two files, so that a change measures more than the code.
struct SettingDifference {
  std::string setting;      // "link emulation", "timer"
  std::string base, next;   // the two files' values
  std::string consequence;  // what the difference means for the comparison
};

// The differences `fobench compare` warns about, link emulation first; empty when none. A file
// that predates the timer attribute differs from every file that names its timer: which clock
// took its times is unknown.
std::vector<SettingDifference> setting_differences(const SystemInfo& base, const SystemInfo& next);

// Why the two files' times cannot be compared at all (one measured on the cuda model, whose
// times are the CPU's, the other not), or empty.
std::string incomparable_machines(const SystemInfo& base, const SystemInfo& next);

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
