// libFuzzer target over read_h5_image (src/results/h5_reader.h), in-process: any crash, sanitizer
// report or exception other than InputError is a bug in the reader. New inputs come from
// mutate_results_image (h5_mutator.h) unless FOB_FUZZ_BYTES=1 also lets libFuzzer flip bytes,
// which reaches HDF5 1.10.8's own parsing bugs (tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fob/types.h"
#include "h5_mutator.h"
#include "mutation_watch.h"
#include "results/h5_reader.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

bool byte_flips() {
  static const bool on = [] {
    const char* v = std::getenv("FOB_FUZZ_BYTES");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// How long one mutation may take: FOB_FUZZ_MUTATION_SECONDS, else 60 s (far beyond the
// milliseconds one takes; an input's own limit, -timeout, is 25 s).
int mutation_limit_seconds() {
  const char* v = std::getenv("FOB_FUZZ_MUTATION_SECONDS");
  const int seconds = v ? std::atoi(v) : 0;
  return seconds > 0 ? seconds : 60;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  std::string prefix = "./";
  const std::string flag = "-artifact_prefix=";
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp((*argv)[i], flag.c_str(), flag.size()) == 0) prefix = (*argv)[i] + flag.size();
  }
  fob::fuzz::start_mutation_watch(prefix, mutation_limit_seconds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<char> image(data, data + size);
  try {
    fob::read_h5_image("fuzz.h5", image);
  } catch (const fob::InputError&) {
    // Refused as bad input: what the reader is for.
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (byte_flips() && seed % 3 == 0) return LLVMFuzzerMutate(data, size, max_size);
  fob::fuzz::mutation_started(data, size);
  const std::vector<char> out = fob::fuzz::mutate_results_image(data, size, max_size, seed);
  fob::fuzz::mutation_done();
  if (out.empty()) return byte_flips() ? LLVMFuzzerMutate(data, size, max_size) : size;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
