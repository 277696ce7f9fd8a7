// Whether a case can run: its sizes, its workload's own rules and its strategy's reach, checked
// before anything is allocated.
#include <string>
#include <utility>

#include "fob/workload.h"

namespace fob {

namespace {

// Every dimension at least 1, and the dimensions a workload splits divisible by the world.
void validate_sizes(const CaseSpec& spec, const Geometry& g) {
  const Shape& s = spec.shape;
  const std::string world = std::to_string(spec.world);
  auto value_text = [&](const char* key, int64_t value) {
    return std::string(key) == "batch*seq" ? std::to_string(s.batch) + "*" + std::to_string(s.seq) +
                                                 " = " + std::to_string(value) + " tokens"
                                           : std::to_string(value);
  };
  for (auto [key, value] : {std::pair<const char*, int64_t>{g.m_key, g.m}, {g.f_key, g.f}}) {
    if (key == g.f_key && !g.f_split) continue;
    if (value % spec.world != 0) {
      throw InputError(std::string(key) + ": " + value_text(key, value) +
                       " does not divide by the world size " + world + " (" +
                       to_string(spec.workload) +
                       " splits it across ranks); choose a multiple of " + world);
    }
  }
}

// The strategy applies to the workload, and its parameter fits the rows each rank owns.
void validate_strategy(const CaseSpec& spec, const Geometry& g) {
  const Strategy* strategy = spec.strategy.strategy;
  if (!strategy) return;
  if (!strategy_applies(*strategy, spec.workload)) {
    throw InputError("strategies: '" + spec.strategy.text + "' applies to workload " +
                     applicable_workloads(*strategy) + " only, not " + to_string(spec.workload));
  }
  const int64_t block = g.m / spec.world;
  if (strategy->param_name && spec.strategy.param > block) {
    throw InputError("strategies: '" + spec.strategy.text + "': " + strategy->param_name + " = " +
                     std::to_string(spec.strategy.param) + " exceeds the " + std::to_string(block) +
                     " rows each rank owns (" + g.m_key + "/world); valid " + strategy->param_name +
                     ": 1.." + std::to_string(block));
  }
}

}  // namespace

void validate_case(const CaseSpec& spec) {
  const Shape& s = spec.shape;
  if (spec.world < 1) {
    throw InputError("world: " + std::to_string(spec.world) + " ranks; need at least 1");
  }
  for (auto [key, value] : {std::pair<const char*, int64_t>{"batch", s.batch},
                            {"seq", s.seq},
                            {"hidden", s.hidden},
                            {"ffn", s.ffn}}) {
    if (value < 1) {
      throw InputError(std::string(key) + ": " + std::to_string(value) + " must be at least 1");
    }
  }
  if (spec.loopback && spec.workload->no_loopback) {
    throw InputError(std::string("loopback: workload ") + spec.workload->name +
                     " cannot run in loopback: " + spec.workload->no_loopback +
                     "; run it with one process per rank");
  }
  const Geometry g = geometry(spec.workload, s);
  validate_sizes(spec, g);
  if (spec.workload->validate) spec.workload->validate(spec, g);
  validate_strategy(spec, g);
}

}  // namespace fob
