// How the hardware ran a case, in the results file (docs/results-schema.md#hardware-facts): the
// host's launch time of every timed iteration on every rank (`launch_seconds`, which the steps do
// not hold) and each rank's account of the case (`facts`: communicator, channels, transports,
// registration, clocks), and the host speed probe around each round's slot (`round_probe`,
// speed_probe.h). All optional: a case without them predates them, or its backend said
// nothing.
#include <cmath>
#include <string>
#include <vector>

#include "fob/types.h"
#include "h5_schema.h"
#include "h5_util.h"

namespace fob::h5io {

void write_case_hardware(hid_t group, const CaseResult& c, const Where& w) {
  if (!c.facts.empty()) write_attr_str(group, "facts", join_lines(c.facts), w);
  if (!c.round_probe.empty()) {
    write_growing_dataset(group, "round_probe", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                          {c.round_probe.size()}, c.round_probe.data(), w);
  }
  if (c.launch_seconds.empty()) return;
  const hsize_t iters = static_cast<hsize_t>(c.iters);
  const hsize_t ranks = static_cast<hsize_t>(c.ranks());
  write_growing_dataset(group, "launch_seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {iters, ranks},
                        c.launch_seconds.data(), w);
}

void append_case_hardware(hid_t group, const CaseResult& c, int from_iter, int from_round,
                          const Where& w) {
  if (!c.facts.empty()) write_attr_str(group, "facts", join_lines(c.facts), w);
  if (!c.round_probe.empty()) {
    if (!has_link(group, "round_probe", w)) {
      write_growing_dataset(group, "round_probe", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                            {c.round_probe.size()}, c.round_probe.data(), w);
    } else if (c.round_probe.size() > static_cast<size_t>(from_round)) {
      append_to_dataset(group, "round_probe", H5T_NATIVE_DOUBLE,
                        c.round_probe.size() - static_cast<size_t>(from_round),
                        c.round_probe.data() + from_round, w);
    }
  }
  if (c.launch_seconds.empty()) return;
  const size_t ranks = static_cast<size_t>(c.ranks());
  if (!has_link(group, "launch_seconds", w)) {
    write_growing_dataset(group, "launch_seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                          {static_cast<hsize_t>(c.iters), static_cast<hsize_t>(c.ranks())},
                          c.launch_seconds.data(), w);
    return;
  }
  append_to_dataset(group, "launch_seconds", H5T_NATIVE_DOUBLE,
                    static_cast<hsize_t>(c.iters - from_iter),
                    c.launch_seconds.data() + static_cast<size_t>(from_iter) * ranks, w);
}

// A probe is a positive time, or NaN where its round had none; one per round.
void read_round_probe(hid_t group, CaseResult& c, const Where& w) {
  if (!has_link(group, "round_probe", w)) return;
  std::vector<hsize_t> dims;
  H5Id dset = open_dataset(group, "round_probe", 1, H5T_FLOAT, sizeof(double), dims, w);
  expect_dims(dims, {static_cast<hsize_t>(c.rounds().size())}, "round_probe", w);
  c.round_probe.resize(dims[0]);
  read_dataset(dset, H5T_NATIVE_DOUBLE, c.round_probe.data(), c.round_probe.size(), "round_probe",
               w);
  for (const double p : c.round_probe) {
    if (!std::isnan(p) && !(p > 0 && std::isfinite(p))) {
      throw InputError("'" + w.file + "': " + w.what +
                       " has a speed probe that is not a positive time (round_probe)");
    }
  }
}

void read_case_hardware(hid_t group, CaseResult& c, const Where& w) {
  if (has_attr(group, "facts")) {
    c.facts = split_lines(read_attr_str(group, "facts", Text::lines, w));
  }
  read_round_probe(group, c, w);
  if (!has_link(group, "launch_seconds", w)) return;
  read_array(group, "launch_seconds", H5T_FLOAT, H5T_NATIVE_DOUBLE,
             {static_cast<hsize_t>(c.iters), static_cast<hsize_t>(c.ranks())}, c.launch_seconds, w);
}

}  // namespace fob::h5io
