#include "fob/inputs.h"

#include <algorithm>
#include <cstring>

#include "fob/types.h"

namespace fob {

uint64_t tensor_hash(uint64_t seed, const std::string& tensor) {
  return input_mix(seed ^ fnv1a(tensor));
}

std::pair<int64_t, double> selection_entry(uint64_t seed, const std::string& tensor, int64_t col,
                                           int64_t select_from) {
  const SelectionEntry e = selection_column(tensor_hash(seed, tensor), col, select_from);
  return {e.row, e.sign};
}

// Element by element, the reference the bulk fills are tested against: it keeps the plain
// `h % 3` where they fold (input_mod3).
double input_value(uint64_t seed, const std::string& tensor, int64_t row, int64_t col,
                   int64_t select_from, int64_t period) {
  if (tensor == "zeros") return 0.0;
  if (period > 0) {
    // A selection matrix keeps its one +-1 per column: only its columns repeat.
    col %= period;
    if (select_from == 0) row %= period;
  }
  if (select_from > 0) {
    const auto [pick, sign] = selection_entry(seed, tensor, col, select_from);
    return row == pick ? sign : 0.0;
  }
  uint64_t h = tensor_hash(seed, tensor);
  h = input_mix(h ^ static_cast<uint64_t>(row));
  h = input_mix(h ^ (static_cast<uint64_t>(col) << 1));
  return static_cast<double>(static_cast<int>(h % 3) - 1);
}

InputFill input_fill(const Plan& plan, const InputRegion& region, uint64_t seed) {
  return InputFill{.tensor_hash = tensor_hash(seed, region.tensor),
                   .global_row = region.global_row,
                   .global_col = region.global_col,
                   .rows = region.rows,
                   .cols = plan.buffers[region.buffer].cols,
                   .select_from = region.select_from,
                   .period = plan.input_period,
                   .zeros = region.tensor == "zeros",
                   .timing_sigma = region.weight ? kTimingWeightSigma : 1.0f};
}

namespace {

// The hot loop: branch-free, no calls left after inlining, so the compiler vectorises it.
template <typename T>
[[gnu::always_inline]] inline void dense_run(uint64_t row_hash, uint64_t first_col, int64_t count,
                                             T* out) {
  for (int64_t j = 0; j < count; ++j) {
    out[j] = static_cast<T>(dense_input(row_hash, first_col + static_cast<uint64_t>(j)));
  }
}

// splitmix64's 64-bit multiplies vectorise well only with AVX-512 (vpmullq); the x86-64
// baseline emulates them. With GCC on x86-64 the loop is also compiled for AVX-512 and AVX2 and
// the CPU picks at load time: AVX-512 fills about six times faster than the baseline.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FOB_INPUT_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FOB_INPUT_CLONES
#endif

FOB_INPUT_CLONES void fill_dense_run(uint64_t row_hash, uint64_t first_col, int64_t count,
                                     float* out) {
  dense_run(row_hash, first_col, count, out);
}
FOB_INPUT_CLONES void fill_dense_run(uint64_t row_hash, uint64_t first_col, int64_t count,
                                     double* out) {
  dense_run(row_hash, first_col, count, out);
}

// A row whose columns repeat every `period`: one period is generated (from the wrapped first
// column to the period's end, then from column 0) and copied along the rest of the row.
template <typename T>
void fill_periodic_row(uint64_t row_hash, const InputFill& f, T* out) {
  const int64_t first = f.global_col % f.period;
  const int64_t head = std::min(f.cols, f.period - first);
  fill_dense_run(row_hash, static_cast<uint64_t>(first), head, out);
  fill_dense_run(row_hash, 0, std::min(f.cols, f.period) - head, out + head);
  for (int64_t j = f.period; j < f.cols; j += f.period) {
    std::copy_n(out, std::min(f.period, f.cols - j), out + j);
  }
}

// Zeros, then each column's one +-1 where it falls within the region's rows.
template <typename T>
void fill_selection(const InputFill& f, T* out) {
  std::fill_n(out, f.rows * f.cols, T(0));
  for (int64_t j = 0; j < f.cols; ++j) {
    const SelectionEntry e = selection_in_region(f, j);
    if (e.row >= 0 && e.row < f.rows) out[e.row * f.cols + j] = static_cast<T>(e.sign);
  }
}

template <typename T>
void fill_region(const InputFill& f, T* out) {
  if (f.zeros) {
    std::fill_n(out, f.rows * f.cols, T(0));
    return;
  }
  if (f.select_from > 0) {
    fill_selection(f, out);
    return;
  }
  for (int64_t i = 0; i < f.rows; ++i) {
    T* row = out + i * f.cols;
    if (f.period > 0) {
      fill_periodic_row(input_row_hash(f, i), f, row);
    } else {
      fill_dense_run(input_row_hash(f, i), static_cast<uint64_t>(f.global_col), f.cols, row);
    }
  }
}

bool same_content(const InputFill& a, const InputFill& b) {
  if (a.zeros || b.zeros) return a.zeros == b.zeros && a.rows == b.rows && a.cols == b.cols;
  // The tensor's hash stands for its name and the seed: two tensors with equal hashes have
  // equal values.
  return a.tensor_hash == b.tensor_hash && a.global_row == b.global_row &&
         a.global_col == b.global_col && a.rows == b.rows && a.cols == b.cols &&
         a.select_from == b.select_from && a.period == b.period;
}

}  // namespace

void fill_input(const InputFill& fill, float* out) {
  fill_region(fill, out);
}

namespace {

template <typename T>
void fill_timing_region(const InputFill& f, T* out) {
  if (f.zeros) {
    std::fill_n(out, f.rows * f.cols, T(0));
    return;
  }
  for (int64_t i = 0; i < f.rows; ++i) {
    for (int64_t j = 0; j < f.cols; ++j) {
      out[i * f.cols + j] = static_cast<T>(
          timing_element(f.tensor_hash, f.global_row + i, f.global_col + j, f.timing_sigma));
    }
  }
}

}  // namespace

void fill_timing(const InputFill& fill, float* out) {
  fill_timing_region(fill, out);
}
void fill_timing(const InputFill& fill, double* out) {
  fill_timing_region(fill, out);
}
void fill_input(const InputFill& fill, double* out) {
  fill_region(fill, out);
}

std::vector<bool> written_buffers(const Plan& plan) {
  std::vector<bool> written(plan.buffers.size(), false);
  for (const Task& t : plan.tasks) {
    if (t.c.buffer >= 0) written[t.c.buffer] = true;
  }
  return written;
}

const void* SharedInputs::find(const InputFill& fill, int elem_bytes) const {
  for (const Region& r : regions_) {
    if (r.elem_bytes == elem_bytes && same_content(r.fill, fill)) return r.data;
  }
  return nullptr;
}

void SharedInputs::add(const void* owner, const InputFill& fill, int elem_bytes, const void* data,
                       bool written) {
  regions_.push_back({owner, fill, elem_bytes, data, written});
}

void SharedInputs::iterations_begin(const void* owner) {
  std::erase_if(regions_, [owner](const Region& r) { return r.owner == owner && r.written; });
}

void SharedInputs::forget(const void* owner) {
  std::erase_if(regions_, [owner](const Region& r) { return r.owner == owner; });
}

}  // namespace fob
