// The engine's parts, shared by its files and its unit tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine.h"
#include "segment.h"

namespace fobnccl {

// reduce.cpp: out[i] = op over parts[p][i], p in rank order; false for a type not modelled.
bool reduce(DType t, RedOp op, const std::vector<const unsigned char*>& parts, void* out,
            size_t count);
// bfloat16 / float16 values, for the tests.
float to_float(DType t, const void* p);
void from_float(DType t, float f, void* p);

// deadlock.cpp: what a rank publishes while it is blocked, and the cycle a waiting rank finds.
void publish_blocked(RankSlot& slot, uint64_t waits_for, const std::string& text,
                     uint64_t stalled_since);
void clear_blocked(RankSlot& slot);
std::string read_blocked(const RankSlot& slot);
// The ranks of a cycle through `me` in the waits-for graph of ranks stalled at least
// `threshold_ns` (me first), or empty.
std::vector<int> find_cycle(const Segment& seg, int me, uint64_t now, uint64_t threshold_ns);
// The report of a cycle: every rank on it and what it is blocked in.
std::string describe_cycle(const Segment& seg, const std::vector<int>& cycle);

}  // namespace fobnccl
