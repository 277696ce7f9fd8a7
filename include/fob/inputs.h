// The deterministic input generator (DESIGN.md section 6): every rank, backend and the oracle
// (oracle.h) derive the same global tensors from a seed alone, so no rank ever sends another
// its inputs and a check needs no copy of them. It is kept apart from the oracle because the
// backends fill their buffers from it on every run, verified or not.
// Inputs lie in {-1, 0, 1}, so every sum a GEMM forms is an integer far below 2^24 for any
// realistic shape and is exact in fp32 whatever the summation order.
#include <cstdint>
#include <string>
#include <utility>

#include "fob/plan.h"

#pragma once

namespace fob {

// Element (row, col) of a global input tensor ("X", "W1", "H", "W2", "P"; "zeros" is 0). With
// select_from > 0 the tensor is a signed selection matrix: column col holds one +-1, in a row
// below select_from. attn projects Q, K and V that way, so that Q K^T / sqrt(dh) is of order
// one, as trained attention's logits are, instead of saturating the softmax; a dense GEMM does
// the same work whatever the values. With period > 0 every tensor repeats every `period` rows
// and columns (a selection matrix: columns only), so that all ranks' shards are equal (see
// Plan::input_period).
double input_value(uint64_t seed, const std::string& tensor, int64_t row, int64_t col,
                   int64_t select_from = 0, int64_t period = 0);

// The one +-1 of column `col` of a selection matrix: its row and sign. Public so that the
// oracle can gather the columns a selection picks instead of multiplying by the matrix.
std::pair<int64_t, double> selection_entry(uint64_t seed, const std::string& tensor, int64_t col,
                                           int64_t select_from);

// Fills the region's rows of its buffer (region.rows x the buffer's width), row-major.
void fill_input(const Plan& plan, const InputRegion& region, uint64_t seed, double* out);

}  // namespace fob
