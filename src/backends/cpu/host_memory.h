// What the host has for this process: the kernel's MemAvailable, lowered by the cgroup limit
// the process runs under (Slurm's --mem, a container), which is what the OOM killer enforces.
#pragma once

#include <cstdint>

namespace fob {

// Bytes the process may still allocate, or -1 when /proc/meminfo cannot be read.
int64_t host_available_bytes();

}  // namespace fob
