// Dynamic race-detector annotations, the convention ThreadSanitizer's and Valgrind's race
// detectors read (and the cuda model's, tests/cuda_model): a hand-off between host threads
// through a queue or a flag, which a detector that watches only the CUDA API cannot see. Weak:
// where no such detector is linked they are null, and each costs one test.
#pragma once

extern "C" {
void AnnotateHappensBefore(const char* file, int line, const volatile void* key)
    __attribute__((weak));
void AnnotateHappensAfter(const char* file, int line, const volatile void* key)
    __attribute__((weak));
}

namespace fob {

// What this thread did so far happens before whatever a thread does after happens_after(key).
inline void happens_before(const volatile void* key) {
  if (AnnotateHappensBefore) AnnotateHappensBefore(__FILE__, __LINE__, key);
}
inline void happens_after(const volatile void* key) {
  if (AnnotateHappensAfter) AnnotateHappensAfter(__FILE__, __LINE__, key);
}

}  // namespace fob
