// Which BLAS the process got at run time. fobench links the generic libblas.so.3, which is
// OpenBLAS in a normal build (Debian's alternatives) and the reference BLAS in the GPU bundle,
// so OpenBLAS's own calls are looked up rather than linked.
#pragma once

#include <string>

namespace fob {

// Sets OpenBLAS's thread count for the calling thread (and, in some builds, the process).
// Returns false when the BLAS is not OpenBLAS and has no such control (it runs one thread).
bool blas_set_threads(int threads);

// How many threads the BLAS runs when asked for `threads`: OpenBLAS caps the request at what
// it was built for; a BLAS without thread control runs one.
int blas_threads_applied(int threads);

// "OpenBLAS 0.3.21 ... (libblas.so.3 at /path)" or "reference BLAS (libblas.so.3 at /path)".
std::string blas_description();

}  // namespace fob
