// Mutations of a results file through the HDF5 API (fuzz_results.cpp): attributes, datasets and
// links replaced by what a crafted file can hold, so that every file the fuzzer feeds the reader
// is one HDF5 itself parses, and a crash it finds is in the reader, not in HDF5's parsing of
// flipped bytes (tests/fuzz/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fob::fuzz {

// 1 to 3 mutations of the image data[0, size), chosen by `seed`: the mutated image, or an
// empty one where `data` does not open as HDF5 or the result would exceed `max_size`.
std::vector<char> mutate_results_image(const uint8_t* data, size_t size, size_t max_size,
                                       unsigned seed);

}  // namespace fob::fuzz
