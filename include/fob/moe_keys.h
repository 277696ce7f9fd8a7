// The MoE keys' valid values (experts, top_k, expert_ffn, moe_skew, capacity_factor, moe_seed):
// one rule for the config and for the readers of journals and results files, which refuse a
// case outside it.
#pragma once

#include <cstdint>
#include <string>

#include "fob/moe_shape.h"

namespace fob {

struct Config;

// Past a million experts no router table or per-expert count fits a rank's memory; the readers
// hold files to the same bound before anything is sized by it.
inline constexpr int64_t kMaxExperts = int64_t{1} << 20;
inline constexpr double kMaxMoeSkew = 4;  // Zipf exponent: beyond 4 one expert takes nearly all
inline constexpr double kMinCapacityFactor = 0.1;
inline constexpr double kMaxCapacityFactor = 64;

// The value of a count key (experts, top_k, expert_ffn, moe_seed: the field it sets) from its
// text. 0 stands for the default and cannot be given: InputError naming the key, the value and
// the range when the text is no integer or the value is outside the key's range.
int64_t parse_moe_count(int64_t MoeShape::*field, const std::string& text);

// Empty when every field of `moe` is 0 (its default) or within its key's range and top_k is at
// most the experts; else "KEY: VALUE is out of range; valid: ..." for the first that is not.
std::string moe_shape_problem(const MoeShape& moe);

// The same for the fields a case recorded: a case without experts records 0 in every field.
std::string recorded_moe_problem(const MoeShape& moe);

// validate_config's part for the MoE keys: their ranges, and that a key that is set has a
// workload with experts among the config's (its workload, its swept ones and its cases').
// InputError naming the key, the value and the valid range or workloads.
void validate_moe_keys(const Config& c);

}  // namespace fob
