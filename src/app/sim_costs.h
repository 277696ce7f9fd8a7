// The cost models `fobench sim` prices its cases with: the config's transport's path (copy
// engines for ce, else the link classes), and for --tune with transport auto on a machine with
// copy engines, copy engines as well for every candidate whose world fits in one node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fob/machine.h"
#include "fob/workload.h"

namespace fob {

// The fact a case priced on copy engines carries (CaseResult::facts): what --tune reads to
// tell its candidates apart, and what a reader of the file sees.
inline constexpr const char* kCeFact = "rank 0: sim_transport=ce (copy engines)";

// One case and the cost model it is priced with.
struct PricedCase {
  CaseSpec spec;
  const MachineCost* cost = nullptr;
};

class SimCosts {
 public:
  // InputError where the transport cannot be priced on `machine` (ce without copy_engines).
  SimCosts(const Machine& machine, const std::string& transport, bool tune);
  SimCosts(const SimCosts&) = delete;
  SimCosts& operator=(const SimCosts&) = delete;

  // Every case on the main path (InputError for a world that path cannot price), then, where
  // --tune tries copy engines too, baseline and every overlapping case within one node again
  // on them (after all the others, so that ties go to the main path).
  std::vector<PricedCase> price(const std::vector<CaseSpec>& specs) const;
  const MachineCost& main() const { return main_; }
  // What /system's transport names: "links", "ce", or "links, ce" when `cases` hold both.
  static std::string paths(const std::vector<PricedCase>& cases);

 private:
  MachineCost main_;
  std::optional<MachineCost> ce_;  // --tune's second path
  int ranks_per_node_ = 1;
};

}  // namespace fob
