#include "fob/compare_history.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fob/metrics.h"
#include "fob/result_files.h"
#include "fob/strategy.h"
#include "fob/types.h"

namespace fob {
namespace {

// What pooled runs must share: times taken otherwise are not one setting's.
void require_same_setting(const SystemInfo& first, const SystemInfo& other,
                          const std::string& first_path, const std::string& path) {
  const std::pair<const char*, std::pair<std::string, std::string>> settings[] = {
      {"backend", {first.backend, other.backend}},
      {"transport", {first.transport, other.transport}},
      {"link emulation", {first.link_emulation, other.link_emulation}},
      {"timer", {first.requested_timer(), other.requested_timer()}},
      {"world size", {std::to_string(first.world_size), std::to_string(other.world_size)}}};
  for (const auto& [name, values] : settings) {
    if (values.first == values.second) continue;
    throw InputError("cannot pool " + path + " with " + first_path + ": its " + name + " is '" +
                     values.second + "' where the other's is '" + values.first +
                     "'; pooled files must be runs of one setting");
  }
}

// `from`'s timer index in `into`'s list of timer names, adding it where new.
int8_t timer_index(CaseResult& into, const std::string& name) {
  auto it = std::find(into.timers.begin(), into.timers.end(), name);
  if (it != into.timers.end()) return static_cast<int8_t>(it - into.timers.begin());
  into.timers.push_back(name);
  return static_cast<int8_t>(into.timers.size() - 1);
}

// `next`'s rounds after `into`'s; the cases are of one key and shape.
void append_rounds(CaseResult& into, const CaseResult& next, const std::string& path) {
  if (next.world != into.world || next.max_tasks != into.max_tasks ||
      next.ranks() != into.ranks() || !next.arrays_match() || !into.arrays_match()) {
    throw InputError("cannot pool case " + next.id + " (" + next.key().text() + ") of " + path +
                     ": its task table differs from the first file's case of that key");
  }
  const std::vector<int32_t> into_rounds = into.rounds(), next_rounds = next.rounds();
  std::vector<double> probes = into.round_probe, next_probes = next.round_probe;
  probes.resize(into_rounds.size(), std::numeric_limits<double>::quiet_NaN());
  next_probes.resize(next_rounds.size(), std::numeric_limits<double>::quiet_NaN());
  probes.insert(probes.end(), next_probes.begin(), next_probes.end());
  into.round_probe =
      std::all_of(probes.begin(), probes.end(), [](double p) { return std::isnan(p); })
          ? std::vector<double>()
          : probes;
  into.round_iters = into_rounds;
  into.round_iters.insert(into.round_iters.end(), next_rounds.begin(), next_rounds.end());
  const bool timers =
      into.timers_match() && next.timers_match() && !into.timers.empty() && !next.timers.empty();
  if (timers) {
    for (const int8_t t : next.iteration_timer) {
      into.iteration_timer.push_back(timer_index(into, next.timers[static_cast<size_t>(t)]));
    }
  } else {
    into.timers.clear();
    into.iteration_timer.clear();
  }
  const bool launches = !into.launch_seconds.empty() && !next.launch_seconds.empty();
  into.launch_seconds.insert(into.launch_seconds.end(), next.launch_seconds.begin(),
                             next.launch_seconds.end());
  if (!launches) into.launch_seconds.clear();
  into.step_seconds.insert(into.step_seconds.end(), next.step_seconds.begin(),
                           next.step_seconds.end());
  into.task_start.insert(into.task_start.end(), next.task_start.begin(), next.task_start.end());
  into.task_end.insert(into.task_end.end(), next.task_end.begin(), next.task_end.end());
  into.iters += next.iters;
  into.verified = std::min(into.verified, next.verified);
  into.max_abs_err = std::max(into.max_abs_err, next.max_abs_err);
  into.facts.insert(into.facts.end(), next.facts.begin(), next.facts.end());
}

}  // namespace

ResultFile pool_results(const std::vector<ResultFile>& files,
                        const std::vector<std::string>& paths) {
  if (files.empty()) throw std::logic_error("pool_results: no file");
  ResultFile out = files.front();
  out.stats.clear();
  for (size_t f = 1; f < files.size(); ++f) {
    require_same_setting(files.front().system, files[f].system, paths.front(), paths[f]);
    std::map<CaseKey, size_t> seen;  // occurrences of a key so far in file f
    for (const CaseResult& c : files[f].cases) {
      const size_t nth = seen[c.key()]++;
      size_t found = 0;
      CaseResult* into = nullptr;
      for (CaseResult& o : out.cases) {
        if (o.key() == c.key() && found++ == nth) into = &o;
      }
      if (into == nullptr) {
        throw InputError(paths[f] + " holds case " + c.id + " (" + c.key().text() + "), which " +
                         paths.front() + " does not; pooled files must hold the same cases");
      }
      append_rounds(*into, c, paths[f]);
    }
    if (files[f].cases.size() != files.front().cases.size()) {
      throw InputError(paths[f] + " holds " + std::to_string(files[f].cases.size()) +
                       " case(s) where " + paths.front() + " holds " +
                       std::to_string(files.front().cases.size()) +
                       "; pooled files must hold the same cases");
    }
  }
  return out;
}

std::vector<std::string> history_files(const std::string& dir, int runs) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw InputError("--history: '" + dir + "' is not a directory (a link is not followed)");
  }
  std::vector<std::pair<std::string, std::string>> found;  // created_utc, path
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) throw InputError("--history: cannot read the directory '" + dir + "'");
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0) names.push_back(name);
  }
  closedir(d);
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    struct stat f {};
    if (lstat(path.c_str(), &f) != 0 || !S_ISREG(f.st_mode)) continue;  // links are not read
    found.emplace_back(read_results(path).run.created_utc, path);
  }
  if (found.size() < 2) {
    throw InputError("--history: '" + dir + "' holds " + std::to_string(found.size()) +
                     " results file(s) (*.h5, regular files); a history needs at least 2 runs");
  }
  std::sort(found.begin(), found.end());
  const size_t keep = std::min(found.size(), static_cast<size_t>(std::max(runs, 2)));
  std::vector<std::string> out;
  for (size_t i = found.size() - keep; i < found.size(); ++i) out.push_back(found[i].second);
  return out;
}

namespace {

// Each history run's median of the case `key`'s metric: log T for the ratio metrics (busbw is
// bytes over T: the same spread), T - T_comp of the run's compute_only for exposed_comm. NaN
// where the run lacks the case (or its reference).
double run_value(const ResultFile& run, const CaseKey& key, bool absolute) {
  const auto median_of = [&](const CaseKey& k) {
    for (const CaseResult& c : run.cases) {
      if (c.key() == k) return median_step(c);
    }
    return std::numeric_limits<double>::quiet_NaN();
  };
  const double t = median_of(key);
  if (!absolute) return t > 0 ? std::log(t) : std::numeric_limits<double>::quiet_NaN();
  return t - median_of(key.with_strategy(role_name(StrategyRole::compute_reference)));
}

double sample_sd(const std::vector<double>& v) {
  if (v.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0;
  for (const double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (const double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace

int apply_history_tolerance(Comparison& comparison, const std::vector<ResultFile>& history,
                            double k) {
  int widened = 0;
  for (CaseChange& c : comparison.changes) {
    std::vector<double> values;
    for (const ResultFile& run : history) {
      const double v = run_value(run, c.key, c.absolute);
      if (std::isfinite(v)) values.push_back(v);
    }
    const double sd = sample_sd(values);
    // On the log scale sigma is the relative spread; the threshold is a fraction.
    const double spread = c.absolute ? k * sd : std::expm1(k * sd);
    if (!(spread > c.threshold)) continue;
    rejudge(c, comparison.metric, spread);
    ++widened;
  }
  return widened;
}

}  // namespace fob
