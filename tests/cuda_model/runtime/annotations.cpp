// The dynamic race-detector annotations (the names and signatures ThreadSanitizer and Valgrind
// export; src/backends/cuda/annotations.h declares them weak): a program's hand-off between host
// threads, through a queue or a flag the model cannot see, becomes a happens-before edge.
#include "fobmodel/model.h"

extern "C" {

__attribute__((visibility("default"))) void AnnotateHappensBefore(const char*, int,
                                                                  const volatile void* key) {
  fobmodel::host_release(const_cast<const void*>(key));
}

__attribute__((visibility("default"))) void AnnotateHappensAfter(const char*, int,
                                                                 const volatile void* key) {
  fobmodel::host_acquire(const_cast<const void*>(key));
}

}  // extern "C"
