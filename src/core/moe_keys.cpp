// The MoE keys' valid values (fob/moe_keys.h), for the config and the readers of files alike.
#include "fob/moe_keys.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fob/config.h"
#include "fob/workload.h"

namespace fob {

namespace {

// An integer key of the MoE shape: 0 in the field is its default, a value given is 1..high.
struct CountKey {
  const char* key;
  int64_t MoeShape::*field;
  int64_t high;
};

// expert_ffn is a GEMM dimension, held to cuBLAS's and NCCL's 32-bit counts as ffn is.
constexpr CountKey kCountKeys[] = {
    {"experts", &MoeShape::experts, kMaxExperts},
    {"top_k", &MoeShape::top_k, kMaxExperts},
    {"expert_ffn", &MoeShape::expert_ffn, std::numeric_limits<int32_t>::max()},
    {"moe_seed", &MoeShape::seed, std::numeric_limits<int64_t>::max()},
};

constexpr const char* kSkewRange = "0 (uniform routing) to 4 (the Zipf exponent of the experts)";
constexpr const char* kCapacityRange = "0 (no capacity limit), or 0.1 to 64";

const CountKey& count_key(int64_t MoeShape::*field) {
  for (const CountKey& k : kCountKeys) {
    if (field == k.field) return k;
  }
  throw std::logic_error("parse_moe_count: a field that is no count key of the MoE shape");
}

std::string out_of_range(const char* key, const std::string& value, const std::string& valid) {
  return std::string(key) + ": " + value + " is out of range; valid: " + valid;
}

std::string count_range(const CountKey& k) {
  return "1 to " + std::to_string(k.high);
}

std::string number_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// The first MoE key the shape sets, and its value as a message shows it.
std::pair<const char*, std::string> first_set_key(const MoeShape& moe) {
  for (const CountKey& k : kCountKeys) {
    if (moe.*(k.field) != 0) return {k.key, std::to_string(moe.*(k.field))};
  }
  if (moe.skew != 0) return {"moe_skew", number_text(moe.skew)};
  return {"capacity_factor", number_text(moe.capacity_factor)};
}

// The workloads a config runs: its workload, the values of a workload sweep and those its cases
// set (each already parsed by the key's setter).
std::vector<Workload> config_workloads(const Config& c) {
  std::vector<Workload> workloads = {c.workload};
  if (const auto swept = c.sweep.find("workload"); swept != c.sweep.end()) {
    for (const std::string& name : swept->second) workloads.push_back(find_workload(name));
  }
  for (const auto& fields : c.cases) {
    for (const auto& [key, value] : fields) {
      if (key == "workload") workloads.push_back(find_workload(value));
    }
  }
  return workloads;
}

void check_keys_apply(const Config& c) {
  std::vector<std::string> names;
  for (Workload w : config_workloads(c)) {
    if (w != nullptr && w->has_experts) return;
    if (std::find(names.begin(), names.end(), to_string(w)) == names.end()) {
      names.emplace_back(to_string(w));
    }
  }
  const auto [key, value] = first_set_key(c.shape.moe);
  const std::string valid = expert_workloads();
  throw InputError(std::string(key) + ": " + value +
                   " applies to workloads with experts only, not to " + join_list(names, ", ") +
                   "; valid workloads: " + (valid.empty() ? "none in this build" : valid));
}

}  // namespace

int64_t parse_moe_count(int64_t MoeShape::*field, const std::string& text) {
  const CountKey& k = count_key(field);
  const int64_t value = parse_integer<int64_t>(k.key, text);
  if (value < 1 || value > k.high) {
    throw InputError(out_of_range(k.key, std::to_string(value), count_range(k)));
  }
  return value;
}

std::string moe_shape_problem(const MoeShape& moe) {
  for (const CountKey& k : kCountKeys) {
    const int64_t value = moe.*(k.field);
    if (value != 0 && (value < 1 || value > k.high)) {
      return out_of_range(k.key, std::to_string(value), count_range(k));
    }
  }
  const int64_t experts = moe.experts > 0 ? moe.experts : MoeShape::kDefaultExperts;
  if (moe.top_k > experts) {
    return "top_k: " + std::to_string(moe.top_k) + " is more than the " + std::to_string(experts) +
           " experts; valid: 1 to " + std::to_string(experts);
  }
  // Written so that NaN fails each range too.
  if (!(moe.skew >= 0 && moe.skew <= kMaxMoeSkew)) {
    return out_of_range("moe_skew", number_text(moe.skew), kSkewRange);
  }
  if (moe.capacity_factor != 0 &&
      !(moe.capacity_factor >= kMinCapacityFactor && moe.capacity_factor <= kMaxCapacityFactor)) {
    return out_of_range("capacity_factor", number_text(moe.capacity_factor), kCapacityRange);
  }
  return {};
}

std::string recorded_moe_problem(const MoeShape& moe) {
  if (moe.experts == 0 && !(moe == MoeShape{})) {
    const auto [key, value] = first_set_key(moe);
    return std::string(key) + ": " + value +
           " recorded for a case without experts, which records 0 in every MoE field";
  }
  return moe_shape_problem(moe);
}

void validate_moe_keys(const Config& c) {
  const MoeShape& moe = c.shape.moe;
  if (const std::string problem = moe_shape_problem(moe); !problem.empty()) {
    throw InputError(problem);
  }
  if (moe == MoeShape{}) return;
  check_keys_apply(c);
}

}  // namespace fob
