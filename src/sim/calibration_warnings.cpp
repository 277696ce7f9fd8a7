// What makes a calibration doubtful, said before anyone trusts the machine file it wrote.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "fob/calibrate.h"
#include "fob/metrics.h"
#include "fob/strategy.h"
#include "fob/trust.h"

namespace fob {
namespace {

std::string file_name(const ResultFile& file, size_t index) {
  return "file " + std::to_string(index + 1) + " (created " + file.run.created_utc + ")";
}

}  // namespace

std::vector<std::string> calibration_warnings(const std::vector<ResultFile>& files) {
  std::vector<std::string> out;
  std::set<int64_t> worlds;
  for (size_t i = 0; i < files.size(); ++i) {
    const ResultFile& file = files[i];
    // `fobench run` records oversubscription in the notes (system_info.cpp): ranks x BLAS
    // threads above the host's cores.
    if (file.system.notes.find(" ranks shared ") != std::string::npos) {
      out.push_back(file_name(file, i) + ": " + file.system.notes.substr(0, 60) +
                    "...: its launch delays and interference terms price the turns the ranks "
                    "took on the cores; calibrate from a run with one rank per core");
    }
    for (const CaseResult& c : file.cases) worlds.insert(c.world);
    for (const Summary& s : summarize(file)) {
      const StrategyRole role = strategy_role(s.strategy);
      const bool reference =
          role == StrategyRole::compute_reference || role == StrategyRole::comm_reference;
      if (!reference || !(s.t_cv > kNoisyReferenceCv)) continue;
      char cv[32];
      std::snprintf(cv, sizeof cv, "%.2f", s.t_cv);
      out.push_back(file_name(file, i) + ": " + s.text() + " varied with cv " + cv + " (above " +
                    std::to_string(kNoisyReferenceCv).substr(0, 4) +
                    "): the rates fitted to it carry that noise; more rounds or idle cores");
    }
  }
  if (worlds.size() > 1) {
    std::string list;
    for (int64_t w : worlds) list += (list.empty() ? "" : ", ") + std::to_string(w);
    out.push_back("the files mix world sizes " + list +
                  ": one link and one interference model are fitted to all of them");
  }
  return out;
}

}  // namespace fob
