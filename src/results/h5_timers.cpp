// A case's per-iteration timers in the results file (docs/results-schema.md#timers): the attribute
// `timers` (the timers' names, one a line), the dataset `iteration_timer` ([iters][ranks] int8,
// an index into `timers`) and, for people reading the file, the attribute `timer`
// (CaseResult::timer_text()). A case without them was timed by /system's timer throughout.
#include <string>
#include <vector>

#include "fob/types.h"
#include "h5_schema.h"
#include "h5_util.h"

namespace fob::h5io {

namespace {

void write_case_timer_names(hid_t group, const CaseResult& c, const Where& w) {
  if (c.timers.empty()) return;
  write_attr_str(group, "timers", join_lines(c.timers), w);
  write_attr_str(group, "timer", c.timer_text(), w);
}

}  // namespace

void write_case_timers(hid_t group, const CaseResult& c, const Where& w) {
  if (c.timers.empty()) return;
  write_case_timer_names(group, c, w);
  const hsize_t iters = static_cast<hsize_t>(c.iters);
  const hsize_t ranks = static_cast<hsize_t>(c.ranks());
  write_growing_dataset(group, "iteration_timer", H5T_STD_I8LE, H5T_NATIVE_INT8, {iters, ranks},
                        c.iteration_timer.data(), w);
}

void append_case_timers(hid_t group, const CaseResult& c, int from_iter, const Where& w) {
  if (c.timers.empty()) return;
  write_case_timer_names(group, c, w);
  const size_t ranks = static_cast<size_t>(c.ranks());
  append_to_dataset(group, "iteration_timer", H5T_NATIVE_INT8,
                    static_cast<hsize_t>(c.iters - from_iter),
                    c.iteration_timer.data() + static_cast<size_t>(from_iter) * ranks, w);
}

void read_case_timers(hid_t group, CaseResult& c, const Where& w) {
  const bool names = has_attr(group, "timers");
  const bool table = has_link(group, "iteration_timer", w);
  if (!names && !table) return;
  if (names != table) {
    throw InputError("'" + w.file + "': " + w.what + " has " +
                     (names ? "timers but no iteration_timer" : "iteration_timer but no timers"));
  }
  c.timers = split_lines(read_attr_str(group, "timers", Text::lines, w));
  // Each name is shown on a line of its own.
  for (std::string& timer : c.timers) timer = clean_text(timer, Text::line);
  read_array(group, "iteration_timer", H5T_INTEGER, H5T_NATIVE_INT8,
             {static_cast<hsize_t>(c.iters), static_cast<hsize_t>(c.ranks())}, c.iteration_timer,
             w);
  if (!c.timers_match()) {
    throw InputError("'" + w.file + "': " + w.what +
                     "'s iteration_timer names a timer beyond its " +
                     std::to_string(c.timers.size()) + " timers");
  }
}

}  // namespace fob::h5io
