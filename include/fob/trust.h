// How far a summary row can be trusted (docs/metrics.md#doubts-how-far-a-row-can-be-trusted):
// every row carries its dispersion (cv, and the median's 95% interval) and, where a figure cannot
// be trusted, says why in the row instead of printing a percentage outside its meaningful range.
#pragma once

#include <string>
#include <vector>

namespace fob {

struct Summary;

// A reference (compute_only, comm_only) whose step times vary more than this (sample standard
// deviation over the mean) makes every figure derived from it doubtful: on an idle machine
// fobench's references stay well under 5%; a shared machine's neighbours push them past 10%.
inline constexpr double kNoisyReferenceCv = 0.10;

// Reads the rows of one summarize() call (each case with its shape's references) and, row by
// row: blanks (NaN) the derived figures that fall outside their meaningful range or mean
// nothing (a world of one rank has no communication), and writes Summary::doubts, the reasons,
// "; "-separated, empty for a row beyond doubt.
void assess_trust(std::vector<Summary>& rows);

// One line for stderr when a file's references are noisy: the largest reference cv, the
// threshold and what would help; empty when none is.
std::string noise_warning(const std::vector<Summary>& rows);

// The distribution-free 95% interval of the median of `sorted` (ascending, not empty): the
// order statistics at n/2 -+ 0.98 sqrt(n) (the binomial's normal approximation). Both ends are
// the median itself for n < 3.
void median_interval(const std::vector<double>& sorted, double* low, double* high);

}  // namespace fob
