// The deterministic input generator: every rank, backend and the oracle (oracle.h) derive the
// same global tensors from a seed alone, so no rank ever sends another its inputs and a check
// needs no copy of them. It is kept apart from the oracle because the backends fill their
// buffers from it on every run, verified or not.
// Inputs lie in {-1, 0, 1}, so every sum a GEMM forms is an integer far below 2^24 for any
// realistic shape and is exact in fp32 whatever the summation order.
//
// Two implementations compute the same values: input_value() element by element, the reference
// the oracle uses, and the bulk fills (fill_input() here on the host, the cuda backend's fill
// kernel on the GPU) over the shared per-element math of input_hash.h, with the tensor's hash
// computed once per region and each row's hash once per row.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fob/input_hash.h"
#include "fob/plan.h"

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

// The tensor's hash of `seed` and its name, which the per-element math starts from.
uint64_t tensor_hash(uint64_t seed, const std::string& tensor);

// What filling `region` of `plan` needs: its rows, its buffer's width, where it lies in its
// global tensor and the tensor's hash.
InputFill input_fill(const Plan& plan, const InputRegion& region, uint64_t seed);

// Writes the region (fill.rows x fill.cols, row-major) at `out`: exactly input_value()'s values,
// converted as static_cast converts them. Dense rows are one tight loop over the columns that
// the compiler vectorises.
void fill_input(const InputFill& fill, float* out);
void fill_input(const InputFill& fill, double* out);
// The region's timing data (timing_element in input_hash.h): "zeros" stays zero.
void fill_timing(const InputFill& fill, float* out);
void fill_timing(const InputFill& fill, double* out);

// Which of the plan's buffers its tasks write (every task writes only its `c` view): input
// regions in the others hold their generated values until the buffers are poisoned or freed.
std::vector<bool> written_buffers(const Plan& plan);

// Input regions of prepared cases that still hold their generated values, so that another case
// of the shape can copy a region instead of generating it again. It holds addresses in the
// owners' own buffers and no memory of its own: sharing costs nothing beyond the cases' buffers.
// The owner reports when its regions may change: before its iterations (regions in buffers it
// writes) and before its buffers are poisoned or freed (all of them).
class SharedInputs {
 public:
  // A region holding `fill`'s values in elements of `elem_bytes` bytes, or null when none does.
  const void* find(const InputFill& fill, int elem_bytes) const;
  // `owner`'s region at `data` holds `fill`'s values now; `written`: the owner's iterations
  // write its buffer.
  void add(const void* owner, const InputFill& fill, int elem_bytes, const void* data,
           bool written);
  // The owner's iterations are about to run: its regions in buffers they write are dropped.
  void iterations_begin(const void* owner);
  // The owner's buffers are about to be overwritten or freed: all its regions are dropped.
  void forget(const void* owner);
  size_t size() const { return regions_.size(); }

 private:
  struct Region {
    const void* owner = nullptr;
    InputFill fill;
    int elem_bytes = 0;
    const void* data = nullptr;
    bool written = false;
  };
  std::vector<Region> regions_;
};

}  // namespace fob
