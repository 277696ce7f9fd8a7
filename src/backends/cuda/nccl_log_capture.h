// NCCL's own account of its communicators, captured for the results file. NCCL reports channel
// counts, ring path types and per-peer transports only in its INFO log, and reads NCCL_DEBUG,
// NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE once, at the first call that logs (NCCL 2.28
// src/debug.cc), and writes the file line-buffered; so before any NCCL call this points the log
// at a file in a private folder (mkdtemp, 0700: nothing planted there can be followed) and then
// reads it back a piece at a time (fob/nccl_log.h parses it). NCCL's warnings, which would have
// gone to stderr, are copied there; where the user asked for NCCL_DEBUG output, every line is.
#pragma once

#include <string>
#include <vector>

namespace fob {

class NcclLogCapture {
 public:
  // Call before the process's first NCCL call. `rank` prefixes the copied lines.
  explicit NcclLogCapture(int rank);
  ~NcclLogCapture();
  NcclLogCapture(const NcclLogCapture&) = delete;
  NcclLogCapture& operator=(const NcclLogCapture&) = delete;

  // The lines NCCL wrote since the last call (empty where nothing is captured).
  std::vector<std::string> take();
  // Why nothing is captured ("" when it is): the user's own NCCL_DEBUG_FILE, a folder that
  // could not be made, a file NCCL did not open.
  const std::string& unavailable() const { return why_; }

 private:
  int rank_ = 0;
  std::string dir_, path_;  // the private folder and the file NCCL writes
  long long offset_ = 0;
  bool echo_all_ = false;  // the user set NCCL_DEBUG: every line goes on to stderr
  std::string partial_;    // a line NCCL had not finished when last read
  std::string why_;
};

}  // namespace fob
