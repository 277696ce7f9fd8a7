// How the cuda backend times its tasks: CUPTI kernel activity where it can (cupti_timer.h),
// the CUDA events that bracket every task on its stream otherwise, and the host clock for
// host-staged transfers. Every results file names which (Backend::timer()).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "cuda_backend.h"
#include "fob/results.h"

namespace fob {

namespace {
constexpr const char* kCuptiTimer = "cupti kernel activity";
constexpr const char* kEventTimer = "cuda events (stream order)";
}  // namespace

std::string CudaBackend::timer_named(const char* device_timer) const {
  std::string t = device_timer;
  if (const std::string host = transport_->host_timer(); !host.empty()) t += "; " + host;
  if (on_model_) t += " on the " + std::string(kCudaModelDevice) + ": CPU threads, not GPU times";
  return t;
}

std::string CudaBackend::timer() const {
  return timer_named(cupti_ ? kCuptiTimer : kEventTimer);
}

void CudaBackend::start_cupti() {
  std::string why;
  if (const char* choice = std::getenv("FOB_TIMER"); choice && std::strcmp(choice, "events") == 0) {
    why = "FOB_TIMER=events";
  } else if (why = transport_->kernel_timing_refused(); why.empty()) {
    cupti_ = CuptiTimer::start(&why);
  }
  if (!cupti_) {
    if (rank_ == 0) {
      std::fprintf(stderr,
                   "[fobench] rank %d: no CUPTI kernel timing (%s): task times are CUDA events "
                   "in stream order, which mark when a stream reaches a task, not when its "
                   "kernels run\n",
                   rank_, why.c_str());
    }
    return;
  }
  check_.cuda(cudaMalloc(&origin_, 1), "allocating the timing origin marker");
  check_.cuda(cudaEventCreate(&origin_end_), "creating the origin marker's event");
}

// The iteration's origin on CUPTI's clock: a one-byte memset right after the origin event.
void CudaBackend::mark_origin() {
  if (!cupti_) return;
  ++iteration_seq_;
  cupti_->push(cupti_id(-1));
  check_.cuda(cudaMemsetAsync(origin_, 0, 1, compute_), "marking the iteration's origin");
  cupti_->pop();
  check_.cuda(cudaEventRecord(origin_end_, compute_), "bracketing the iteration's origin");
}

void CudaBackend::event_times(IterationTimes& times) {
  for (size_t i = 0; i < plan_->tasks.size(); ++i) {
    if (transport_->runs_on_host(plan_->tasks[i])) continue;
    float start_ms = 0, end_ms = 0;
    check_.cuda(cudaEventElapsedTime(&start_ms, it0_, current_->start[i]), "reading a task start");
    check_.cuda(cudaEventElapsedTime(&end_ms, it0_, current_->end[i]), "reading a task end");
    times.start[i] = start_ms * 1e-3;
    times.end[i] = end_ms * 1e-3;
  }
}

// CUPTI's kernel times of the iteration: every task's from its first kernel's (or copy's) start
// to its last one's end, counted from the origin marker. Returns why they cannot be used, or "".
std::string CudaBackend::cupti_times(IterationTimes& times) {
  const size_t n = plan_->tasks.size();
  // Collected every iteration, so that none leaves records behind for the next.
  size_t dropped = 0;
  const std::vector<CuptiTimer::Span> spans = cupti_->collect(cupti_id(-1), n + 1, &dropped);
  if (dropped > 0) return "CUPTI dropped " + std::to_string(dropped) + " activity records";
  if (spans[0].records == 0) return "CUPTI recorded no origin marker";
  // Without events, a task whose calls put no work CUPTI saw on the GPU has no other time.
  for (size_t i = 0; i < n && !events_on_; ++i) {
    if (spans[i + 1].records == 0 && !transport_->runs_on_host(plan_->tasks[i])) {
      return "CUPTI recorded no work of task " + std::to_string(i) + " '" + plan_->tasks[i].label +
             "'";
    }
  }
  if (events_on_) {
    times.stream_start = times.start;
    times.stream_end = times.end;
  }
  float lag_ms = 0;
  check_.cuda(cudaEventElapsedTime(&lag_ms, it0_, origin_end_), "reading the origin's lag");
  times.origin_lag = lag_ms * 1e-3;
  const uint64_t origin = spans[0].start;
  bool host_timed = false;
  for (size_t i = 0; i < n; ++i) {
    const CuptiTimer::Span& s = spans[i + 1];
    host_timed |= transport_->runs_on_host(plan_->tasks[i]);
    // A task whose calls put no work on the GPU keeps its stream-event bracket.
    if (s.records == 0 || transport_->runs_on_host(plan_->tasks[i])) continue;
    times.start[i] = (static_cast<double>(s.start) - static_cast<double>(origin)) * 1e-9;
    times.end[i] = (static_cast<double>(s.end) - static_cast<double>(origin)) * 1e-9;
  }
  // Host-timed transfers count from the events' origin, the kernels from the marker, which
  // ran up to origin_lag after it: the two agree only that closely.
  if (host_timed) times.host_alignment += times.origin_lag;
  times.timer = timer_named(kCuptiTimer);
  return "";
}

IterationTimes CudaBackend::read_times() {
  IterationTimes times;
  const size_t n = plan_->tasks.size();
  times.start.assign(n, std::numeric_limits<double>::quiet_NaN());
  times.end.assign(n, std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < n; ++i) {
    if (transport_->runs_on_host(plan_->tasks[i])) {
      times.start[i] = transport_->host_start(static_cast<int>(i));
      times.end[i] = transport_->host_end(static_cast<int>(i));
    }
  }
  if (events_on_) event_times(times);
  times.host_alignment = transport_->host_alignment();
  if (!cupti_) return finish_times(times);
  times.timer = timer_named(kEventTimer);
  const std::string why = cupti_times(times);
  if (why.empty()) return finish_times(times);
  if (timer_note_.empty()) {
    timer_note_ = why;
    std::fprintf(stderr, "[fobench] rank %d: %s: %s\n", rank_, why.c_str(),
                 events_on_ ? "this iteration's task times are CUDA events (stream order)"
                            : "the iteration runs again with CUDA events recorded");
  }
  if (!events_on_) {
    // No timer took this iteration: it runs again, and the plan records events from now on.
    times.retry = true;
    current_->events = true;
    ++current_->retried;
  }
  return finish_times(times);
}

IterationTimes CudaBackend::finish_times(IterationTimes& times) {
  for (double e : times.end) {
    if (!std::isnan(e)) times.step = std::max(times.step, e);
  }
  return times;
}

}  // namespace fob
