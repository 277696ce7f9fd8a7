// Which timer took each iteration of a case, and what a case and a file say of it. A time is
// labelled by the timer that took it, never by the one that was asked for: a cuda iteration
// whose kernel activity CUPTI could not deliver falls back to its stream events, which mark
// when a stream reaches a task rather than when its kernels run.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "fob/results.h"

namespace fob {

bool CaseResult::timers_match() const {
  if (timers.empty() && iteration_timer.empty()) return true;
  const size_t cells =
      static_cast<size_t>(std::max(iters, 0)) * static_cast<size_t>(std::max(ranks(), 0));
  if (timers.empty() || timers.size() > 127 || iteration_timer.size() != cells) return false;
  return std::all_of(iteration_timer.begin(), iteration_timer.end(),
                     [&](int8_t t) { return t >= 0 && static_cast<size_t>(t) < timers.size(); });
}

namespace {

// How many rank-iterations each timer took, in the order of `timers`; empty where not recorded.
std::vector<size_t> timer_counts(const CaseResult& c) {
  std::vector<size_t> counts(c.timers.size(), 0);
  if (!c.timers_match()) return {};
  for (int8_t t : c.iteration_timer) ++counts[static_cast<size_t>(t)];
  return counts;
}

}  // namespace

std::string CaseResult::timer_text() const {
  const std::vector<size_t> counts = timer_counts(*this);
  size_t used = 0, total = 0;
  for (size_t n : counts) {
    used += n > 0;
    total += n;
  }
  if (used == 0) return "";
  if (used == 1) {
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] > 0) return timers[i];
    }
  }
  std::string text = "mixed:";
  const char* sep = " ";
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    text += sep + timers[i] + " in " + std::to_string(counts[i]) + " of " + std::to_string(total) +
            " rank-iterations";
    sep = "; ";
  }
  return text;
}

std::string files_timer(const std::string& requested, const std::vector<CaseResult>& cases) {
  // Every timer some recorded iteration used, with the cases it timed.
  std::map<std::string, size_t> used;
  for (const CaseResult& c : cases) {
    const std::vector<size_t> counts = timer_counts(c);
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] > 0) ++used[c.timers[i]];
    }
  }
  if (used.empty() || (used.size() == 1 && used.begin()->first == requested)) return requested;
  if (used.size() == 1) return used.begin()->first;
  std::string text = "mixed (each case's iteration_timer says which timed an iteration):";
  const char* sep = " ";
  for (const auto& [timer, n] : used) {
    text += sep + timer + " in " + std::to_string(n) + " case(s)";
    sep = "; ";
  }
  return text;
}

void append_round_timers(CaseResult& result, const RoundTimes& round) {
  const size_t ranks = static_cast<size_t>(result.ranks());
  const size_t before = static_cast<size_t>(result.iters) * ranks;
  if (round.timers.empty()) {
    if (!result.iteration_timer.empty()) {
      throw std::logic_error("case " + result.id + ": a round recorded no timer, the earlier did");
    }
    return;
  }
  if (round.timers.size() != static_cast<size_t>(round.iters) * ranks) {
    throw std::logic_error("case " + result.id + ": a round's timers do not match its iterations");
  }
  if (result.iteration_timer.size() != before) {
    // Earlier rounds, read from a file that did not record timers: say so rather than guess.
    result.timers.assign(1, "not recorded");
    result.iteration_timer.assign(before, 0);
  }
  for (const std::string& name : round.timers) {
    auto at = std::find(result.timers.begin(), result.timers.end(), name);
    if (at == result.timers.end()) {
      if (result.timers.size() >= 127) {
        throw std::logic_error("case " + result.id + ": more than 127 timers");
      }
      at = result.timers.insert(result.timers.end(), name);
    }
    result.iteration_timer.push_back(static_cast<int8_t>(at - result.timers.begin()));
  }
}

}  // namespace fob
