// The list of built-in workloads. A new workload is one file in this folder plus one line here
// (or, for a workload outside fobench's sources, one call to register_workload).
#include <stdexcept>

#include "fob/config.h"
#include "fob/workload.h"

namespace fob {

extern const WorkloadDef kAgGemm;
extern const WorkloadDef kGemmRs;
extern const WorkloadDef kMlp;
extern const WorkloadDef kAgGemmW;
extern const WorkloadDef kGemmRsGrad;
extern const WorkloadDef kGemmAr;
extern const WorkloadDef kMlpBwd;
extern const WorkloadDef kAttn;
extern const WorkloadDef kUlysses;
extern const WorkloadDef kMoe;

namespace {

std::vector<Workload>& registry() {
  static std::vector<Workload> list = {&kAgGemm, &kGemmRs, &kMlp,  &kAgGemmW, &kGemmRsGrad,
                                       &kGemmAr, &kMlpBwd, &kAttn, &kUlysses, &kMoe};
  return list;
}

}  // namespace

const std::vector<Workload>& all_workloads() {
  return registry();
}

void register_workload(const WorkloadDef& def) {
  if (find_workload(def.name) != nullptr) {
    throw std::logic_error(std::string("register_workload: '") + def.name +
                           "' is registered already");
  }
  registry().push_back(&def);
}

Workload find_workload(const std::string& name) {
  for (Workload w : all_workloads()) {
    if (name == w->name) return w;
  }
  return nullptr;
}

Workload default_workload() {
  return &kMlp;
}

const char* to_string(Workload workload) {
  return workload ? workload->name : "(none)";
}

std::string workload_choices() {
  std::string out;
  for (Workload w : all_workloads()) out += (out.empty() ? "" : ", ") + std::string(w->name);
  return out;
}

Workload parse_workload(const std::string& text) {
  if (Workload w = find_workload(text)) return w;
  throw InputError("workload: " + quote_value(text) +
                   " is not a workload; valid: " + workload_choices());
}

}  // namespace fob
