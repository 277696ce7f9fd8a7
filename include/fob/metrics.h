// The metrics of docs/metrics.md, computed from measured cases only.
#pragma once

#include <string>
#include <vector>

#include "fob/results.h"

namespace fob {

// A case's metrics (docs/metrics.md) beside what the case is.
struct Summary : CaseKey {
  std::string case_id;
  int32_t iters = 0;
  int32_t verified = -1;
  // Seconds. NaN where the needed reference case (baseline, compute_only, comm_only) is absent.
  double t_median = 0, t_min = 0, t_p90 = 0, t_p99 = 0, t_cv = 0;
  double t_ci_low = 0, t_ci_high = 0;  // the median's 95% interval (trust.h, median_interval)
  double t_comp = 0, t_comm = 0, t_lb = 0;
  double exposed_comm = 0;
  // median compute-stream busy time of this case minus compute_only's, measured alike
  double slicing_penalty = 0;
  // speedup is T_baseline / T paired round by round: the median over rounds of baseline's round
  // median over this case's, with the median's 95% interval, over the rounds neither ran in a
  // slow phase (the two slots of a round ran next to each other, so a phase of the machine hits
  // both); the ratio of the medians where fewer than kMinPairedRounds rounds pair up.
  double speedup = 0, ideal_speedup = 0;
  double speedup_ci_low = 0, speedup_ci_high = 0;
  // T / T_lb paired the same way (with compute_only's and comm_only's rounds), and its interval.
  double t_over_tlb = 0, t_over_tlb_ci_low = 0, t_over_tlb_ci_high = 0;
  double comm_reduction = 0, e2e_reduction = 0;
  double overlap_efficiency = 0;
  double hidden_frac = 0;       // "hidden (%)" in the markdown table
  double overlap_pct = 0;       // IMB-NBC documented formula, min denominator
  double tflops = 0;            // per rank, useful flops over T
  double algbw = 0, busbw = 0;  // GB/s, comm_only cases only (NaN elsewhere)
  double concurrency = 0;       // measured_concurrency(): a fraction, NaN without comm tasks
  // nccl-tests' -a over ranks (rank_stats.h): each rank's median own step, seconds, and the
  // rank with the largest; each rank's GEMM rate, TFLOP/s, and the rank with the lowest.
  double rank_t_min = 0, rank_t_avg = 0, rank_t_max = 0;
  int32_t slowest_rank = -1;
  double rank_tflops_min = 0, rank_tflops_avg = 0, rank_tflops_max = 0;
  int32_t slowest_gemm_rank = -1;
  // The SMs the case's transfers took (CaseResult::transfer_sms); -1 where not known.
  int32_t transfer_sms = -1;
  // Why figures of this row cannot be trusted, "; "-separated; empty when they can
  // (trust.h: assess_trust, which also blanks the figures outside their meaningful range).
  std::string doubts;
};

// The measured overlap of compute and communication, from the recorded task intervals (the
// schedule may allow overlap the hardware does not deliver). Per iteration: the sum over ranks
// of the time during which the rank ran a compute-stream task and a comm-stream task at once,
// over the sum over ranks of the comm stream's busy time; each stream's busy time is the union
// of its tasks' intervals, so tasks that overlap on one stream count once. The result is the
// median over the iterations that had comm busy time; NaN when none had (e.g. compute_only) or
// the task arrays do not match the case's shape. Tasks without times (NaN) are left out.
double measured_concurrency(const CaseResult& c);

// The bytes that price a case's transfers (algbw, busbw): what one rank sends over the step.
// Rank 0's where every rank sends alike (an even collective); the busiest rank's where a
// workload routes tokens unevenly (has_experts), since that rank's transfers bound the step
// (docs/metrics.md). NaN when the task table does not match the case.
double step_sent_bytes(const CaseResult& c);

// nccl-tests' busbw, in GB/s, of a case whose step took `seconds` (the summary passes T;
// compare passes each iteration's step), as its strategy prices its transfers
// (Strategy::collective_bytes, busbw_factor: comm_only's). NaN for a strategy without a price,
// a single rank or a zero time.
double case_busbw(const CaseResult& c, double seconds);

// Rounds a paired ratio needs; with fewer it is the ratio of the medians, without an interval.
inline constexpr int kMinPairedRounds = 3;

// Cases match their references by (workload, batch, seq, hidden, ffn, heads, dtype, world).
// Every row is assessed (trust.h) before it is returned.
std::vector<Summary> summarize(const std::vector<CaseResult>& cases);

// A case's CaseStats (results.h): the part of its summary row that reads every iteration
// and task. A writer that adds a round to one case recomputes only that case's (ResultWriter),
// then summarize(cases, stats) combines them with the references in a pass over the cases.
CaseStats case_stats(const CaseResult& c);
// stats[i] must be case_stats(cases[i]); then the cases need only their keys, ids, iters and
// verified (timings may have been dropped, as `fobench sim` does once it has their stats).
std::vector<Summary> summarize(const std::vector<CaseResult>& cases,
                               const std::vector<CaseStats>& stats);
// file.stats when it has one per case, else every case's own.
std::vector<Summary> summarize(const ResultFile& file);

// The middle value; the mean of the two middle ones for an even count. NaN when empty.
double median(std::vector<double> values);
// Each timed iteration's step time (its slowest rank's), in order; empty when the case holds no
// step times. Its median, NaN where any step is unknown.
std::vector<double> step_times(const CaseResult& c);
double median_step(const CaseResult& c);

// The p-quantile (0..1) of ascending `sorted` (not empty), interpolated linearly between
// neighbours; between a finite and an infinite neighbour, the nearer one (no inf - inf).
double percentile(const std::vector<double>& sorted, double p);

}  // namespace fob
