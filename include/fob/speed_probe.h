// A cheap measure of how fast the host runs right now: a fixed small GEMM on this core, timed.
// A shared machine has phases (whole seconds at half speed); a probe before and after each slot
// of a case tells which slots ran in one, so that compare leaves them out and names them
// instead of averaging a slow phase into one strategy's figure.
#pragma once

namespace fob {

// Seconds a fixed 64 x 64 x 64 single-precision GEMM, run four times, takes on this thread, the
// least of three such timings (about 0.1 ms each on a current core). The same work every call,
// so only the host's speed changes what it returns.
double host_speed_probe();

// A slot ran in a slow phase when its probe took this many times the run's median probe: the
// phases to catch run at about half speed, and a probe that shared its core for one of a
// neighbour's time slices took 1.3 to 1.5 times its median on an otherwise idle machine.
inline constexpr double kSlowPhaseFactor = 1.6;

// A round whose median step took this many times its case's lower quartile of round medians
// ran in a slow phase (one a probe's GEMM cannot see); rounds of slow phases, by either sign,
// are left out of a comparison or a paired ratio while they are at most kMaxSlowShare of them.
inline constexpr double kSlowRoundFactor = 1.25;
inline constexpr double kMaxSlowShare = 0.4;

// The host's busy CPU time over all its CPUs (/proc/stat: user, nice, system, irq, softirq,
// steal), this process's CPU time (getrusage) and the steady clock, in seconds: between two
// readings, busy minus what the run's own processes took is what other work ran. A speed
// probe cannot see that work (it runs between the others' time slices); this can. busy is
// negative where /proc/stat cannot be read.
struct HostCpu {
  double busy = -1, own = 0, wall = 0;
  // Of `busy`, the time a hypervisor ran other guests on this machine's CPUs (/proc/stat's
  // steal; 0 where the kernel reports none).
  double steal = 0;
};
HostCpu host_cpu_now();

// The host's load average over the last minute (/proc/loadavg), NaN where unreadable.
double host_load_average();

// Other work kept at least this many of the host's CPUs busy while a file was measured: the
// file was measured under load.
inline constexpr double kBusyHostCpus = 0.5;

}  // namespace fob
