// A mixture-of-experts case's load in the results file (docs/moe-load.md): the
// group `moe_load` in the case's group, its datasets CaseResult::moe_load's vectors. Optional: a
// case without it has no experts, or predates it.
#include <stdexcept>
#include <string>
#include <vector>

#include "fob/moe_load.h"
#include "fob/types.h"
#include "h5_schema.h"
#include "h5_util.h"

namespace fob::h5io {

namespace {

constexpr const char* kGroup = "moe_load";

enum class Dims { ranks, experts, ranks_by_ranks };

struct Dataset {
  const char* name;
  std::vector<int64_t> MoeLoad::*values;
  Dims dims;
};

constexpr Dataset kDatasets[] = {{"dispatch_bytes", &MoeLoad::dispatch_bytes, Dims::ranks},
                                 {"combine_bytes", &MoeLoad::combine_bytes, Dims::ranks},
                                 {"expert_tokens", &MoeLoad::expert_tokens, Dims::experts},
                                 {"rank_tokens", &MoeLoad::rank_tokens, Dims::ranks},
                                 {"dropped", &MoeLoad::dropped, Dims::ranks},
                                 {"token_matrix", &MoeLoad::token_matrix, Dims::ranks_by_ranks}};

std::vector<hsize_t> dims_of(Dims dims, int64_t world, int64_t experts) {
  const auto n = static_cast<hsize_t>(world);
  switch (dims) {
    case Dims::ranks:
      return {n};
    case Dims::experts:
      return {static_cast<hsize_t>(experts)};
    case Dims::ranks_by_ranks:
      return {n, n};
  }
  return {};
}

}  // namespace

void write_case_moe_load(hid_t group, const CaseResult& c, const Where& w) {
  if (c.moe_load.empty()) return;
  // Each dataset's size is taken from the load's counts: a load that does not fit its case
  // would be read past its end.
  if (const std::string why = moe_load_problem(c.moe_load, c.key()); !why.empty()) {
    throw std::logic_error("case " + c.id + ": a MoE load that does not fit its case: " + why);
  }
  H5Id load = create_group(group, kGroup, w);
  const auto experts = static_cast<int64_t>(c.moe_load.expert_tokens.size());
  for (const Dataset& d : kDatasets) {
    write_dataset(load, d.name, H5T_STD_I64LE, H5T_NATIVE_INT64,
                  dims_of(d.dims, c.moe_load.world(), experts), (c.moe_load.*d.values).data(), w);
  }
}

void read_case_moe_load(hid_t group, CaseResult& c, const Where& wc) {
  if (!has_link(group, kGroup, wc)) return;
  Where w{wc.file, wc.what + "'s moe_load", wc.budget};
  if (c.experts <= 0) throw InputError("'" + w.file + "': " + w.what + ": the case has no experts");
  H5Id load = open_group(group, kGroup, w);
  for (const Dataset& d : kDatasets) {
    read_array(load, d.name, H5T_INTEGER, H5T_NATIVE_INT64, dims_of(d.dims, c.world, c.experts),
               c.moe_load.*d.values, w);
  }
  if (const std::string why = moe_load_problem(c.moe_load, c.key()); !why.empty()) {
    throw InputError("'" + w.file + "': " + w.what + ": " + why);
  }
}

}  // namespace fob::h5io
