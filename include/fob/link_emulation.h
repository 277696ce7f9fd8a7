// Link emulation on the host backends: a transfer completes no earlier than latency +
// bytes / bandwidth after both sides posted it. Part of a run's settings; no MPI here.
#pragma once

#include <string>

namespace fob {

struct LinkEmulation {
  double gbps = 0;        // Gbit/s; 0 = no bandwidth limit
  double latency_us = 0;  // added to every transfer
  bool enabled() const { return gbps > 0 || latency_us > 0; }
  std::string describe() const;  // "none" or "emulated: 10 Gbit/s, 5 us latency per transfer"
};

}  // namespace fob
