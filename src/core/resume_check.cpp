// The one place that decides whether a run may add its cases to an interrupted results file:
// only when everything that changes what a measurement means is the same, so that a resumed
// file holds measurements of one setting only.
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "fob/results.h"

namespace fob {
namespace {

// A config's settings by key, each as canonical YAML text. `output` is where the file goes, not
// what was measured.
std::map<std::string, std::string> settings(const std::string& yaml) {
  std::map<std::string, std::string> out;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception&) {
    return out;
  }
  if (!root.IsMap()) return out;
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    if (key == "output") continue;
    YAML::Emitter e;
    e << YAML::Flow << item.second;
    out[key] = e.c_str();
  }
  return out;
}

std::string differs(const std::string& what, const std::string& in_file, const std::string& now) {
  return what + " differs: '" + in_file + "' in the file, '" + now + "' in this run";
}

}  // namespace

std::string resume_mismatch(const ResultFile& existing, const RunInfo& run,
                            const SystemInfo& system) {
  const SystemInfo& was = existing.system;
  // Another build may measure or record differently; its cases and this one's are not one
  // setting, and the finished file would name one build for both.
  if (existing.run.git_commit != run.git_commit) {
    return differs("fobench build (git_commit)", existing.run.git_commit, run.git_commit);
  }
  if (was.backend != system.backend) return differs("backend", was.backend, system.backend);
  if (was.transport != system.transport) {
    return differs("transport", was.transport, system.transport);
  }
  if (was.world_size != system.world_size) {
    return differs("world size", std::to_string(was.world_size), std::to_string(system.world_size));
  }
  if (was.link_emulation != system.link_emulation) {
    return differs("link emulation", was.link_emulation, system.link_emulation);
  }
  // The timer asked for: a case whose iterations fell back to another changed what the file
  // says took its times, not what the run was set up with.
  if (was.requested_timer() != system.requested_timer()) {
    return differs("timer", was.requested_timer(), system.requested_timer());
  }
  // Another kind of device: its transfers may run on another number of copy engines.
  if (was.copy_engines != system.copy_engines) {
    return differs("copy engines (cudaDevAttrAsyncEngineCount)", std::to_string(was.copy_engines),
                   std::to_string(system.copy_engines));
  }
  const auto then = settings(existing.run.config_yaml), now = settings(run.config_yaml);
  if (then.empty()) return "the file holds no readable config to compare this run's with";
  for (const auto& [key, value] : then) {
    auto it = now.find(key);
    if (it == now.end()) return differs("setting '" + key + "'", value, "(absent)");
    if (it->second != value) return differs("setting '" + key + "'", value, it->second);
  }
  for (const auto& [key, value] : now) {
    if (!then.count(key)) return differs("setting '" + key + "'", "(absent)", value);
  }
  return "";
}

}  // namespace fob
