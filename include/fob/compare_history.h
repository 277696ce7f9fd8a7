// Many runs, one verdict: several results files of one setting pooled into one side of a
// comparison, and a history of past runs that NEW is held against with a tolerance as wide as
// the history's own spread (hardware CI's max(threshold, k sigma of the last N runs)).
#pragma once

#include <string>
#include <vector>

#include "fob/compare.h"
#include "fob/results.h"

namespace fob {

// The files as one run: every case's rounds (its iterations, probes and task times) from each
// file in turn, so that the spread between runs is among the rounds an interval is taken over.
// InputError naming the file and what differs where the files measured other settings
// (backend, link emulation, timer, world) or other cases; `paths` name them.
ResultFile pool_results(const std::vector<ResultFile>& files,
                        const std::vector<std::string>& paths);

// The results files (*.h5, regular files, no links followed) directly in `dir`, the `runs`
// newest by the time each was created (its created_utc), oldest first. InputError where `dir`
// is not a directory or holds fewer than 2 such files.
std::vector<std::string> history_files(const std::string& dir, int runs);

// Widens each change's threshold to k times the spread of its case between the history's runs
// (the sample standard deviation of each run's median: of its log for T and busbw, of its
// value for exposed_comm), where that is wider than --threshold, and judges it again. The
// widened threshold is the change's `threshold`; returns how many changes were widened.
int apply_history_tolerance(Comparison& comparison, const std::vector<ResultFile>& history,
                            double k);

}  // namespace fob
