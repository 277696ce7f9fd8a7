// What the three pictures say the same way: how a shape and an emulated link are described.
#pragma once

#include <string>

#include "fob/results.h"
#include "fob/strategy.h"
#include "fob/workload.h"

namespace fob::pictures {

// A run over an emulated link measures the emulation, not the machine's network; every picture
// says so where it cannot be missed.
inline std::string emulated_note(const SystemInfo& sys) {
  if (!sys.simulated.empty())
    return "SIMULATED with " + sys.simulated + ": predicted, not measured";
  if (!sys.link_emulated()) return "";
  std::string detail = sys.link_emulation;  // "emulated: 10 Gbit/s, 5 us latency"
  const std::string prefix = "emulated:";
  if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
  while (!detail.empty() && detail.front() == ' ') detail.erase(detail.begin());
  return "EMULATED link: " + detail + " (times measure the emulation, not this machine's network)";
}

template <typename C>  // CaseResult or Summary: both carry the shape fields
std::string shape_text(const C& c) {
  std::string s = c.workload + " batch " + std::to_string(c.batch) + " × seq " +
                  std::to_string(c.seq) + ", hidden " + std::to_string(c.hidden) + ", ffn " +
                  std::to_string(c.ffn);
  // Heads shape only attention; every case records the shape's default count.
  if (has_attention(c.workload)) s += ", heads " + std::to_string(c.heads);
  return s + ", " + c.dtype + ", world " + std::to_string(c.world);
}

}  // namespace fob::pictures
