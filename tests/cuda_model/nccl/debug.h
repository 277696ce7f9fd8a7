// NCCL's debug log, as NCCL 2.28.9 writes it (src/debug.cc): NCCL_DEBUG, NCCL_DEBUG_SUBSYS and
// NCCL_DEBUG_FILE are read once, at the first call that logs; INFO lines go out when the level is
// INFO (or TRACE) and the line's subsystem is in the mask; WARN lines at any level from WARN up.
// Lines carry NCCL's prefix, "<host>:<pid>:<tid> [<cuda device>] NCCL INFO ", and go to the file
// NCCL_DEBUG_FILE names (%h the short host name, %p the pid, %% a percent sign; opened "w",
// line-buffered), else to stdout. NCCL's tunables (NCCL_MAX_CTAS, ...) are read once too, and
// logged under ENV on their first read.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>

namespace fobnccl::log {

// NCCL's subsystems (src/include/nccl_common.h, ncclDebugLogSubSys).
enum Subsys : uint64_t {
  kInit = 0x1,
  kColl = 0x2,
  kP2p = 0x4,
  kShm = 0x8,
  kNet = 0x10,
  kGraph = 0x20,
  kTuning = 0x40,
  kEnv = 0x80,
  kAlloc = 0x100,
  kCall = 0x200,
  kProxy = 0x400,
  kNvls = 0x800,
  kBootstrap = 0x1000,
  kReg = 0x2000,
  kProfile = 0x4000,
  kRas = 0x8000,
  kAll = ~uint64_t{0},
};

// NCCL's levels (ncclDebugLogLevel).
enum Level : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kAbort = 4, kTrace = 5 };

// The level NCCL_DEBUG set (reading the environment on the first call).
Level level();
// INFO(flags, fmt, ...): printf-formatted, one line.
void info(uint64_t flags, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// VERSION(fmt, ...): the message alone, no prefix.
void version(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// WARN: "\n[<date> <time>] <host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN <text>".
void warn(const std::string& text, std::source_location where);

// An NCCL_<name> integer tunable, read once (NCCL_PARAM): its value, or `fallback` when unset or
// empty; "NCCL_<name> set by environment to <v>." under ENV at the first read.
int64_t param(const char* name, int64_t fallback);

}  // namespace fobnccl::log
