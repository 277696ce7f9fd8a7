// The bulk input fills (fill_input on the host; input_element, and every thread of the cuda fill
// kernels' grid run on the host, from the parameters input_fill computes on the host) against the
// element by element reference input_value(), bit for bit; and the bookkeeping that lets a case
// copy another case's inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "fob/input_hash.h"
#include "fob/inputs.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob {
namespace {

// One buffer of `cols` columns holding the region at row 1, so the region starts at an offset.
struct RegionCase {
  std::string tensor;
  int64_t rows = 1, cols = 1;
  int64_t global_row = 0, global_col = 0;
  int64_t select_from = 0;
  int64_t period = 0;
};

Plan plan_for(const RegionCase& c) {
  Plan plan;
  plan.input_period = c.period;
  plan.buffers.push_back({.name = "B", .rows = c.rows + 2, .cols = c.cols, .layout = {}});
  plan.inputs.push_back({.buffer = 0,
                         .row = 1,
                         .rows = c.rows,
                         .tensor = c.tensor,
                         .global_row = c.global_row,
                         .global_col = c.global_col,
                         .select_from = c.select_from,
                         .weight = false});
  return plan;
}

std::string describe(const RegionCase& c, uint64_t seed) {
  return c.tensor + " rows " + std::to_string(c.rows) + " cols " + std::to_string(c.cols) +
         " at (" + std::to_string(c.global_row) + ", " + std::to_string(c.global_col) +
         ") select_from " + std::to_string(c.select_from) + " period " + std::to_string(c.period) +
         " seed " + std::to_string(seed);
}

// Every element of the fast fills, in fp32 and fp64, and input_element, bit for bit what
// input_value() gives (converted as the backends converted it). Returns the mismatches.
int64_t mismatches(const RegionCase& c, uint64_t seed) {
  const Plan plan = plan_for(c);
  const InputFill fill = input_fill(plan, plan.inputs[0], seed);
  EXPECT_EQ(fill.cols, c.cols);
  EXPECT_EQ(fill.rows, c.rows);
  std::vector<float> as_float(c.rows * c.cols, -7.0f);
  std::vector<double> as_double(c.rows * c.cols, -7.0);
  fill_input(fill, as_float.data());
  fill_input(fill, as_double.data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.cols; ++j) {
      const double want =
          input_value(seed, c.tensor, c.global_row + i, c.global_col + j, c.select_from, c.period);
      const size_t at = i * c.cols + j;
      wrong += std::bit_cast<uint32_t>(as_float[at]) !=
               std::bit_cast<uint32_t>(static_cast<float>(want));
      wrong += std::bit_cast<uint64_t>(as_double[at]) != std::bit_cast<uint64_t>(want);
      wrong += std::bit_cast<uint64_t>(static_cast<double>(input_element(fill, i, j))) !=
               std::bit_cast<uint64_t>(want);
    }
  }
  return wrong;
}

TEST(Inputs, FastFillsMatchInputValueBitForBit) {
  const uint64_t seeds[] = {0, 42, ~uint64_t{0}};
  int regions = 0;
  for (const char* tensor : {"X", "W1", "zeros"}) {
    for (int64_t select_from : {0, 5, 37}) {
      for (int64_t period : {0, 3, 8, 64}) {
        for (int64_t rows : {1, 5, 17}) {
          for (int64_t cols : {1, 7, 33, 130}) {
            for (int64_t global_row : {0, 1000003}) {
              for (int64_t global_col : {0, 5, 130}) {
                const RegionCase c{tensor, rows, cols, global_row, global_col, select_from, period};
                const uint64_t seed = seeds[regions++ % 3];
                ASSERT_EQ(mismatches(c, seed), 0) << describe(c, seed);
              }
            }
          }
        }
      }
    }
  }
}

// Rows far longer than any SIMD width and of odd length, so that a vectorised loop's body and
// its remainder both run, with periods shorter and longer than the row.
TEST(Inputs, LongOddRowsMatchInputValue) {
  for (int64_t period : {0, 7, 1000, 4096}) {
    for (int64_t global_col : {0, 3, 999}) {
      const RegionCase c{"W2", 3, 1031, 12, global_col, 0, period};
      EXPECT_EQ(mismatches(c, 7), 0) << describe(c, 7);
    }
  }
}

TEST(Inputs, Mod3FoldIsTheRemainder) {
  std::vector<uint64_t> values = {0,
                                  1,
                                  2,
                                  3,
                                  0xffffffffULL,
                                  0x100000000ULL,
                                  0x1fffffffeULL,
                                  0xfffffffeffffffffULL,
                                  ~uint64_t{0} - 1,
                                  ~uint64_t{0}};
  for (uint64_t i = 0; i < 100000; ++i) values.push_back(input_mix(i));
  for (uint64_t h : values) EXPECT_EQ(input_mod3(h), h % 3) << h;
}

// The tensor's hash input_fill precomputes for the kernel is the host's, of the seed and name.
TEST(Inputs, FillParametersAreTheHostsHash) {
  const RegionCase c{"W1", 2, 4, 10, 20, 0, 0};
  const Plan plan = plan_for(c);
  for (uint64_t seed : {uint64_t{0}, uint64_t{5}, ~uint64_t{0}}) {
    const InputFill fill = input_fill(plan, plan.inputs[0], seed);
    EXPECT_EQ(fill.tensor_hash, tensor_hash(seed, "W1"));
    EXPECT_EQ(fill.tensor_hash, input_mix(seed ^ fnv1a("W1")));
    EXPECT_EQ(fill.global_row, 10);
    EXPECT_EQ(fill.global_col, 20);
    EXPECT_FALSE(fill.zeros);
  }
  EXPECT_TRUE(input_fill(plan_for({"zeros", 1, 1}), plan_for({"zeros", 1, 1}).inputs[0], 0).zeros);
}

// Every input region of every workload's plans (loopback periods too): input_element at its
// corners is input_value's, and no two regions of a plan overlap (a region a case shares must
// not be written by another region's fill).
TEST(Inputs, EveryWorkloadsRegionsMatchAndDoNotOverlap) {
  for (Workload workload : all_workloads()) {
    for (bool loopback : {false, true}) {
      if (loopback && workload->no_loopback) continue;
      CaseSpec spec;
      spec.workload = workload;
      spec.shape = Shape{.batch = 2, .seq = 8, .hidden = 16, .ffn = 32, .heads = 4};
      spec.world = 2;
      spec.loopback = loopback;
      spec.strategy = parse_strategy("flash");
      const Plan plan = make_plan(spec, 1);
      std::vector<std::vector<bool>> filled(plan.buffers.size());
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        filled[b].assign(plan.buffers[b].rows, false);
      }
      for (const InputRegion& region : plan.inputs) {
        const InputFill fill = input_fill(plan, region, 3);
        for (int64_t i : {int64_t{0}, fill.rows - 1}) {
          for (int64_t j : {int64_t{0}, fill.cols - 1}) {
            EXPECT_EQ(input_element(fill, i, j),
                      input_value(3, region.tensor, region.global_row + i, region.global_col + j,
                                  region.select_from, plan.input_period))
                << to_string(workload) << " " << region.tensor;
          }
        }
        for (int64_t r = region.row; r < region.row + region.rows; ++r) {
          EXPECT_FALSE(filled[region.buffer][r]) << to_string(workload) << " " << region.tensor;
          filled[region.buffer][r] = true;
        }
      }
    }
  }
}

TEST(Inputs, EncodingPicksTheBitsOfEachValue) {
  const InputEncoding bf16{{0xbf80, 0x0000, 0x3f80}};
  EXPECT_EQ(encoded(bf16, -1), 0xbf80u);
  EXPECT_EQ(encoded(bf16, 0), 0u);
  EXPECT_EQ(encoded(bf16, 1), 0x3f80u);
}

// Every thread of the cuda fill kernels' grid (input_fill_blocks_x/y blocks of
// kInputFillThreads), run on the host: the kernels are these thread bodies and nothing else.
template <typename Bits>
std::vector<Bits> kernel_grid_on_host(const InputFill& f, const InputEncoding& e) {
  std::vector<Bits> out(f.rows * f.cols, static_cast<Bits>(0x5a5a5a5a5a5a5a5aULL));
  const int64_t blocks_x = input_fill_blocks_x(f), blocks_y = input_fill_blocks_y(f);
  for (int64_t y = 0; y < blocks_y; ++y) {
    for (int64_t x = 0; x < blocks_x; ++x) {
      for (int64_t t = 0; t < kInputFillThreads; ++t) {
        const FillThread thread{.first_col = x * kInputFillThreads + t,
                                .col_stride = blocks_x * kInputFillThreads,
                                .first_row = y,
                                .row_stride = blocks_y};
        if (f.select_from > 0) {
          fill_selection_thread(out.data(), f, e, thread);
        } else {
          fill_dense_thread(out.data(), f, e, thread);
        }
      }
    }
  }
  return out;
}

template <typename Bits, typename Want>
int64_t kernel_mismatches(const RegionCase& c, const InputEncoding& e, Want want_bits) {
  const Plan plan = plan_for(c);
  const InputFill fill = input_fill(plan, plan.inputs[0], 11);
  const std::vector<Bits> got = kernel_grid_on_host<Bits>(fill, e);
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.cols; ++j) {
      const double want =
          input_value(11, c.tensor, c.global_row + i, c.global_col + j, c.select_from, c.period);
      wrong += got[i * c.cols + j] != want_bits(want);
    }
  }
  return wrong;
}

// Regions wider than the grid's columns (64 blocks of 256) and taller than its rows (1024), so
// both grid-stride loops wrap, in each element size with its dtype's bits: fp64, fp32, bf16 (the
// upper half of fp32's bits for -1, 0 and 1) and fp16.
TEST(Inputs, CudaKernelThreadsWriteInputValueBits) {
  const InputEncoding fp64{{std::bit_cast<uint64_t>(-1.0), 0, std::bit_cast<uint64_t>(1.0)}};
  const InputEncoding fp32{{std::bit_cast<uint32_t>(-1.0f), 0, std::bit_cast<uint32_t>(1.0f)}};
  const InputEncoding bf16{{0xbf80, 0, 0x3f80}};
  const InputEncoding fp16{{0xbc00, 0, 0x3c00}};
  auto fp32_bits = [](double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)); };
  for (int64_t select_from : {0, 40}) {
    for (int64_t period : {0, 8}) {
      for (const RegionCase& c : {RegionCase{"W1", 3, 16400, 5, 7, select_from, period},
                                  RegionCase{"X", 1030, 5, 100, 0, select_from, period},
                                  RegionCase{"H", 17, 33, 0, 130, select_from, period}}) {
        EXPECT_EQ(kernel_mismatches<uint64_t>(c, fp64,
                                              [](double v) { return std::bit_cast<uint64_t>(v); }),
                  0)
            << describe(c, 11);
        EXPECT_EQ(kernel_mismatches<uint32_t>(c, fp32, fp32_bits), 0) << describe(c, 11);
        EXPECT_EQ(kernel_mismatches<uint16_t>(
                      c, bf16, [&](double v) { return static_cast<uint16_t>(fp32_bits(v) >> 16); }),
                  0)
            << describe(c, 11);
        EXPECT_EQ(kernel_mismatches<uint16_t>(
                      c, fp16, [](double v) { return v < 0 ? 0xbc00 : (v > 0 ? 0x3c00 : 0); }),
                  0)
            << describe(c, 11);
      }
    }
  }
}

InputFill fill_of(const char* tensor, int64_t global_row) {
  const RegionCase c{tensor, 4, 8, global_row, 0, 0, 0};
  const Plan plan = plan_for(c);
  return input_fill(plan, plan.inputs[0], 1);
}

TEST(SharedInputs, FindsOnlyTheSameContentInTheSameElementSize) {
  SharedInputs shared;
  const int owner = 0;
  const float data[32] = {};
  const InputFill x = fill_of("X", 0);
  shared.add(&owner, x, 4, data, false);
  EXPECT_EQ(shared.find(x, 4), data);
  EXPECT_EQ(shared.find(x, 8), nullptr);
  EXPECT_EQ(shared.find(fill_of("W1", 0), 4), nullptr);
  EXPECT_EQ(shared.find(fill_of("X", 4), 4), nullptr);
  for (auto change : {&InputFill::global_col, &InputFill::rows, &InputFill::cols,
                      &InputFill::select_from, &InputFill::period}) {
    InputFill other = x;
    other.*change += 1;
    EXPECT_EQ(shared.find(other, 4), nullptr);
  }
}

TEST(SharedInputs, IterationsDropWrittenRegionsAndForgetDropsAll) {
  SharedInputs shared;
  const int first = 0, second = 0;
  const float a[32] = {}, b[32] = {}, c[32] = {};
  const InputFill weight = fill_of("W1", 0), activation = fill_of("X", 0);
  shared.add(&first, weight, 4, a, false);
  shared.add(&first, activation, 4, b, true);
  shared.add(&second, activation, 4, c, true);
  shared.iterations_begin(&first);
  EXPECT_EQ(shared.find(weight, 4), a);      // its buffer is never written
  EXPECT_EQ(shared.find(activation, 4), c);  // only the second case's copy is still clean
  shared.forget(&second);
  EXPECT_EQ(shared.find(activation, 4), nullptr);
  EXPECT_EQ(shared.find(weight, 4), a);
  shared.forget(&first);
  EXPECT_EQ(shared.size(), 0u);
}

}  // namespace
}  // namespace fob
