// Subcommands of the fobench binary.
#pragma once

#include <optional>
#include <string>

#include "fob/config.h"

namespace fob {

// Command-line values for `run`; a set optional overrides the config's value.
struct RunArgs {
  std::string config_path;
  std::optional<std::string> workload, dtype, strategies, backend, transport, output, resume;
  std::optional<int64_t> batch, seq, hidden, ffn, heads;
  std::optional<int> iters, warmup, rounds, blas_threads, world, comm_sms;
  std::optional<double> link_gbps, link_latency_us, timeout;
  std::optional<uint64_t> seed;
  std::optional<bool> verify, graphs, auto_slices;
  bool dry_run = false;
  bool force = false;
  std::string command_line;
};

int run_command(const RunArgs& args);

struct ReportArgs {
  std::string file;
  std::string format = "md";
};

int report_command(const ReportArgs& args);

std::string version_text();

}  // namespace fob
