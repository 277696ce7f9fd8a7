// The Chrome trace event format (JSON), which Perfetto and chrome://tracing open: one process
// per rank, one thread per stream, one complete event per task and iteration, and the plan's
// dependencies as flow events. Reads only the file.
#pragma once

#include <iosfwd>
#include <string>

#include "fob/results.h"

namespace fob {

// case_id empty: every case, one after another on the time axis; otherwise that case only
// (InputError when absent). iter -1: every iteration, else that one (InputError when absent).
void write_trace_json(std::ostream& out, const ResultFile& file, const std::string& case_id,
                      int iter);

}  // namespace fob
