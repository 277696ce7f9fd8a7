// What `run` and `sim` share: turning a config and the command line into cases.
#include "cases.h"

#include <algorithm>
#include <ctime>

#include "fob/strategy.h"

namespace fob {

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof text, format, std::gmtime(&t));
  return text;
}

void apply_args(Config& c, const RunArgs& a) {
  // A value on the command line replaces a list in the config.
  for (const auto& [key, given] : {std::pair<const char*, bool>{"workload", a.workload.has_value()},
                                   {"batch", a.batch.has_value()},
                                   {"seq", a.seq.has_value()},
                                   {"hidden", a.hidden.has_value()},
                                   {"ffn", a.ffn.has_value()},
                                   {"heads", a.heads.has_value()},
                                   {"dtype", a.dtype.has_value()}}) {
    if (given) c.sweep.erase(key);
  }
  if (a.workload) c.workload = parse_workload(*a.workload);
  if (a.batch) c.shape.batch = *a.batch;
  if (a.seq) c.shape.seq = *a.seq;
  if (a.hidden) c.shape.hidden = *a.hidden;
  if (a.ffn) c.shape.ffn = *a.ffn;
  if (a.heads) c.shape.heads = *a.heads;
  if (a.dtype) c.dtype = parse_dtype(*a.dtype);
  if (a.strategies) c.strategies = split_list(*a.strategies);
  if (a.iters) c.iters = *a.iters;
  if (a.warmup) c.warmup = *a.warmup;
  if (a.backend) c.backend = *a.backend;
  if (a.transport) c.transport = *a.transport;
  if (a.link_gbps) c.link.gbps = *a.link_gbps;
  if (a.link_latency_us) c.link.latency_us = *a.link_latency_us;
  if (a.verify) c.verify = *a.verify;
  if (a.output) c.output = *a.output;
  if (a.timeout) c.timeout = *a.timeout;
  if (a.seed) c.seed = *a.seed;
  if (a.blas_threads) c.blas_threads = *a.blas_threads;
  if (a.rounds) c.rounds = *a.rounds;
  if (a.graphs) c.graphs = *a.graphs;
  if (a.auto_slices) c.auto_slices = *a.auto_slices;
  if (a.comm_sms) c.comm_sms = parse_comm_sms(*a.comm_sms);
}

std::vector<CaseSpec> make_cases(const Config& c, int world) {
  std::vector<std::string> specs = reference_strategies();
  for (const std::string& s : c.strategies) {
    if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
  }
  std::vector<CaseSpec> cases;
  for (const std::string& s : specs) {
    if (!strategy_applies(*parse_strategy(s).strategy, c.workload)) continue;
    CaseSpec spec;
    spec.workload = c.workload;
    spec.shape = c.shape;
    spec.shape.ffn = c.ffn();
    spec.dtype = c.dtype;
    spec.world = world;
    spec.strategy = parse_strategy(s);
    validate_case(spec);
    cases.push_back(spec);
  }
  return cases;
}

void check_strategies_apply(const std::vector<Config>& points) {
  for (const std::string& s : points.front().strategies) {
    const Strategy& strategy = *parse_strategy(s).strategy;
    bool somewhere = false;
    for (const Config& point : points) somewhere |= strategy_applies(strategy, point.workload);
    if (!somewhere) {
      throw InputError("strategies: '" + s + "' splits attention queries and applies to " +
                       "workload attn only; this run has no attn case (valid workload: attn)");
    }
  }
}

}  // namespace fob
