// A stand-in for the runtime model's core (fobmodel/model.h), for the cuBLAS and CUPTI models'
// unit tests: enqueue() runs an op at once on the calling thread and reports its activity to
// the installed CUPTI hooks; violations are recorded rather than fatal. The end-to-end tests
// link the real runtime instead.
#pragma once

#include <string>
#include <vector>

#include "fobmodel/model.h"

namespace fobmodel::fake {

struct Enqueued {
  cudaStream_t stream = nullptr;
  std::string name;
  Activity activity = Activity::none;
  std::vector<Footprint> footprint;
  uint32_t correlation = 0;
  std::string note;  // Op::note with what note_running_op() added while it ran
};

// Every op enqueued so far, in order, and every violation reported ("rule: text").
std::vector<Enqueued>& enqueued();
std::vector<std::string>& reported();
const CuptiHooks& hooks();
// The graph node the next enqueued ops report to CUPTI (0: not a graph replay).
void set_graph_node(uint64_t node);
// Makes memory_of() answer `device` for [base, base + bytes).
void add_device_range(const void* base, size_t bytes);

}  // namespace fobmodel::fake
