// Choosing a case by what a reader of the report sees: the id in the table's case column, its
// number, or its strategy.
#include <algorithm>
#include <string>
#include <vector>

#include "fob/results.h"
#include "fob/types.h"

namespace fob {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::string quoted_list(const std::vector<const CaseResult*>& cases) {
  std::string out;
  for (const CaseResult* c : cases) {
    out += (out.empty() ? "" : ", ") + c->id + " (" + c->strategy + ")";
  }
  return out;
}

// What tells cases of one strategy apart, for the message that asks for an id.
std::string shape_of(const CaseResult& c) {
  return c.workload + " batch " + std::to_string(c.batch) + " seq " + std::to_string(c.seq) +
         " hidden " + std::to_string(c.hidden) + " world " + std::to_string(c.world);
}

}  // namespace

const CaseResult& select_case(const ResultFile& file, const std::string& selector,
                              const std::string& option) {
  if (file.cases.empty()) throw InputError("the results file holds no cases");
  std::vector<const CaseResult*> all;
  for (const CaseResult& c : file.cases) all.push_back(&c);
  for (const CaseResult* c : all) {
    if (c->id == selector) return *c;
  }
  if (all_digits(selector)) {
    const long number = std::stol(selector);
    for (const CaseResult* c : all) {
      if (all_digits(c->id) && std::stol(c->id) == number) return *c;
    }
  }
  std::vector<const CaseResult*> matches;
  for (const CaseResult* c : all) {
    if (c->strategy == selector) matches.push_back(c);
  }
  if (matches.empty()) {
    for (const CaseResult* c : all) {
      if (c->strategy_name() == selector) matches.push_back(c);
    }
  }
  if (matches.size() == 1) return *matches.front();
  if (matches.size() > 1) {
    std::string which;
    for (const CaseResult* c : matches) {
      which += (which.empty() ? "" : "; ") + c->id + " " + c->strategy + " " + shape_of(*c);
    }
    throw InputError(option + ": '" + selector + "' matches " + std::to_string(matches.size()) +
                     " cases; give one's id (valid choices: " + which + ")");
  }
  throw InputError(option + ": no case '" + selector +
                   "' in the file (give an id, its number or a strategy; valid choices: " +
                   quoted_list(all) + ")");
}

}  // namespace fob
