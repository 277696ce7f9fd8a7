// Kernel-level task times from CUPTI's activity API, what Nsight Systems reads. An event
// recorded before a task marks when its stream reaches the task, not when its kernels get SMs:
// an NCCL kernel launched while a GEMM fills the GPU waits for GEMM blocks to retire, and
// stream-event brackets would show overlap that never happened. Here every launch of a task is
// tagged with an external correlation id, and the task runs from its first kernel's (or copy's)
// start to its last one's end on the GPU clock.
//
// libcupti is loaded with dlopen, so a machine without it still runs (on the event timer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fob {

class CuptiTimer {
 public:
  // Loads CUPTI and enables kernel, memcpy and memset activity, the runtime and driver API
  // activity that external correlation is recorded against, and external correlation.
  // Returns null with *why set when CUPTI is missing or refuses (a profiler holding it, say).
  static std::unique_ptr<CuptiTimer> start(std::string* why);
  ~CuptiTimer();
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  // Brackets the API calls that launch one task's GPU work: id's low 32 bits are the task's
  // index + 1 (0 is the iteration's origin marker), the high ones count iterations. Graph nodes
  // created meanwhile (stream capture) are tagged with the task, and a replay's work is
  // returned under it.
  void push(uint64_t id);
  void pop();

  // GPU work tagged with one id: its first start and last end (ns, CUPTI's clock), and how
  // many kernels and copies it was.
  struct Span {
    uint64_t start = UINT64_MAX;
    uint64_t end = 0;
    int records = 0;
  };
  // Flushes CUPTI's buffers (after the iteration, outside anything timed) and returns the
  // spans of ids first_id .. first_id + count - 1, and how many records CUPTI dropped since
  // the previous collect().
  std::vector<Span> collect(uint64_t first_id, size_t count, size_t* dropped);

 private:
  CuptiTimer() = default;
};

}  // namespace fob
