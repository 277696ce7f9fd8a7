// A watch over the custom mutator (fuzz_results.cpp). libFuzzer times the target (-timeout)
// but not a custom mutator, and the results mutator spends its time in HDF5 on files it has
// already mutated: a call there that never returns would hold the run until run.sh's `timeout`
// ends it as a failure, with nothing saved to replay. The watch saves the input the mutator was
// given, prints where the mutator is and ends the run with kMutationHangExit, which run.sh reports
// as HDF5's, not the reader's (tests/fuzz/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fob::fuzz {

inline constexpr int kMutationHangExit = 86;

// Starts the watch thread: a mutation that runs longer than `limit_seconds` has its input
// written to `<artifact_prefix>mutation-hang` and ends the process.
void start_mutation_watch(const std::string& artifact_prefix, int limit_seconds);

// Brackets one mutation of data[0, size) (a copy is kept until mutation_done).
void mutation_started(const uint8_t* data, size_t size);
void mutation_done();

}  // namespace fob::fuzz
