// Writing the results file's groups (docs/results-schema.md), for ResultWriter; reading is
// read_h5_image() in h5_reader.cpp (read_results.cpp runs it in a
// child process).
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "fob/metrics.h"
#include "fob/results.h"

namespace fob::h5io {

// The root attributes (`tuned` = 1 only for `fobench sim --tune`), /system and an empty /cases.
void write_header(hid_t file, const RunInfo& run, const SystemInfo& sys, const std::string& path);

// Replaces /system's `timer` (files_timer() of the cases written so far).
void write_timer(hid_t file, const std::string& timer, const std::string& path);

// One case as /cases/<id>; `path` names the file in error messages. A case that holds one
// period of a simulated ring (CaseResult::stored > 0) gets the attribute stored_ranks, its
// [.., world, ..] datasets are [.., stored_ranks, ..], and the file's version becomes
// kSchemaVersion (2); every other file says kSchemaVersionAllRanks (1).
void write_case(hid_t cases_group, const CaseResult& c, const std::string& path);

// Adds iterations [from_iter, iters) and rounds [from_round, ...) of a case written before
// (write_case) with its iteration count, verification and tuning record: a round's data is
// appended, never rewritten.
void append_case(hid_t cases_group, const CaseResult& c, int from_iter, int from_round,
                 const std::string& path);

// A case's per-iteration timers (CaseResult::timers, iteration_timer; h5_timers.cpp), where it
// recorded them: written with the case, appended with its rounds, read back and checked.
struct Where;
void write_case_timers(hid_t group, const CaseResult& c, const Where& w);
void append_case_timers(hid_t group, const CaseResult& c, int from_iter, const Where& w);
void read_case_timers(hid_t group, CaseResult& c, const Where& w);

// A case's launch times (dataset `launch_seconds`, [iters][ranks] float64) and the hardware's
// account of it (attribute `facts`, one "rank R: key=value" a line; h5_hardware.cpp), where it
// recorded them.
void write_case_hardware(hid_t group, const CaseResult& c, const Where& w);
void append_case_hardware(hid_t group, const CaseResult& c, int from_iter, int from_round,
                          const Where& w);
void read_case_hardware(hid_t group, CaseResult& c, const Where& w);

// A case's MoE load (group `moe_load`; h5_moe_load.cpp), where it has one: written with the
// case (it does not grow by rounds), read back and checked against the case's key
// (moe_load_problem).
void write_case_moe_load(hid_t group, const CaseResult& c, const Where& w);
void read_case_moe_load(hid_t group, CaseResult& c, const Where& w);

// /summary over every case so far (stats[i] = case_stats(cases[i])), replacing the previous
// table.
void write_summary(hid_t file, const std::vector<CaseResult>& cases,
                   const std::vector<CaseStats>& stats, const std::string& path);

}  // namespace fob::h5io
