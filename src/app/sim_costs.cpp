// The cost models of `fobench sim` (sim_costs.h).
#include "sim_costs.h"

#include "fob/case_key.h"

namespace fob {

SimCosts::SimCosts(const Machine& machine, const std::string& transport, bool tune)
    : main_(machine, transfer_path(transport)), ranks_per_node_(machine.ranks_per_node) {
  // An explicit transport is priced alone; auto lets --tune choose between the paths.
  if (tune && transport == "auto" && machine.copy_engines.count > 0) {
    ce_.emplace(machine, TransferPath::copy_engines);
  }
}

std::vector<PricedCase> SimCosts::price(const std::vector<CaseSpec>& specs) const {
  std::vector<PricedCase> out;
  out.reserve(specs.size());
  for (const CaseSpec& spec : specs) {
    main_.check_world(spec.world);
    out.push_back({spec, &main_});
  }
  if (!ce_) return out;
  for (const CaseSpec& spec : specs) {
    // The references bound the shape and are priced once, on the main path.
    if (spec.world > ranks_per_node_ || CaseKey::of(spec).is_reference()) continue;
    out.push_back({spec, &*ce_});
  }
  return out;
}

std::string SimCosts::paths(const std::vector<PricedCase>& cases) {
  bool links = false, ce = false;
  for (const PricedCase& c : cases) {
    (c.cost->path() == TransferPath::copy_engines ? ce : links) = true;
  }
  if (links && ce) return "links, ce";
  return ce ? "ce" : "links";
}

}  // namespace fob
