// How a case's ranks compare (nccl-tests' -a: min, average and max over ranks), and the rank
// that held the others back: on a shared machine one rank's core runs slow for seconds while
// the other's does not, and a step time taken at the slowest rank hides which one it was.
#pragma once

#include <string>

#include "fob/results.h"

namespace fob {

// A rank this many times slower than the ranks' average is a straggler (nccl-tests' analyzer
// flags max/avg over 1.5).
inline constexpr double kStragglerRatio = 1.5;

// NaN (and rank -1) where the case holds no timings or its arrays do not match its shape.
RankSpread rank_spread(const CaseResult& c);

// "; "-separated reasons naming a straggling rank (its median step, or its GEMM rate, 1.5x or
// more from the ranks' average), or empty.
std::string straggler_doubt(const RankSpread& s);

// A rank whose experts took more than this many times the ranks' mean expert time holds the
// layer back: the router sent it more tokens (a hot expert lives there) or its core is slow;
// its share of the routed tokens says which. On two ranks the most is 2.
inline constexpr double kHotExpertRatio = 1.25;

// Names the rank whose experts took the most time, with its share of the time and of the
// routed tokens, when it is past kHotExpertRatio times the ranks' mean; else empty.
std::string hot_expert_doubt(const RankSpread& s);

// An emulated link (the cpu backend's fact link_achieved: target time over taken time, summed
// over the case's transfers) that delivered less than this share of its target rate makes the
// case's transfers slower than the link the file names.
inline constexpr double kLinkShortfall = 0.9;

// Names the rank whose emulated link fell furthest short of kLinkShortfall, or empty.
std::string link_doubt(const CaseResult& c);

}  // namespace fob
