// What a results file's hardware accounts (CaseResult::facts, SystemInfo::hardware: "rank R:
// key=value" lines the cuda backend records) mean for its numbers: a throttled GPU in a case's
// row, and a run whose GPUs did not reach each other over NVLink named in the report.
#pragma once

#include <string>
#include <vector>

#include "fob/results.h"

namespace fob {

struct HardwareFact {
  int rank = -1;
  std::string key, value;
};
// The facts among `lines` ("rank R: key=value"); other lines are left out.
std::vector<HardwareFact> parse_facts(const std::vector<std::string>& lines);

// "GPU throttled: rank 1 sw_power_cap" where NVML saw a power cap, thermal or hardware
// slowdown while the case was timed; empty otherwise.
std::string throttle_doubt(const CaseResult& c);

// Why the file's GPUs did not run NCCL's ring over NVLink, where several ranks shared a node:
// NCCL's ring path type inside a node (PCIe or a host bridge), and whether NVML reported NVLink
// between those GPUs (then the ranks did not see each other's GPUs, NVIDIA/nccl#1066). Empty
// when NCCL ran over NVLink, each node held one rank, or nothing was recorded.
std::string nvlink_verdict(const ResultFile& file);

struct TableDocument;
// `fobench report --hardware`: one row per fact, the run's (case "-") and each case's, with the
// NVLink verdict and every throttled case as notes.
TableDocument hardware_document(const ResultFile& file);

}  // namespace fob
