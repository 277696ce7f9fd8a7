// How the cuda backend moves data between ranks, chosen once when the backend is made:
// NcclTransport (NCCL kernels on the comm stream), CeTransport (--transport ce: copy engines
// into peers' IPC-mapped buffers, ordered by stream memory operations) or StagedMpiTransport
// (--transport mpi: device to pinned host memory, MPI on a host thread, back to the device). The
// backend keeps streams, events, GEMMs and iterations; a transport runs the send, recv, exchange
// and collective tasks.
//
// A task the transport runs on a host thread (runs_on_host) has no events and no GPU time: the
// backend holds the launch of a GPU task that depends on it (wait_for_host) rather than make a
// stream wait for host work, and takes its times from the host clock (host_start, host_end).
#pragma once

#include <cuda_runtime.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cuda_buffers.h"
#include "fob/plan.h"

namespace fob {

class Transport {
 public:
  Transport() = default;
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // "nccl", "ce" or "mpi", as Backend::transport() reports it.
  virtual std::string name() const = 0;
  // The clock host-run tasks are timed with, for Backend::timer(); "" when there are none.
  virtual std::string host_timer() const { return ""; }
  // Flags for a plan's dependency and timing events besides the backend's own.
  virtual unsigned event_flags() const { return 0; }
  // Device memory for plan buffers (throws, naming the rank, when there is none), and its
  // release.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  // Device memory the transport needs for a plan besides its buffers (bytes_needed()).
  virtual int64_t extra_bytes(const Plan& /*plan*/) const { return 0; }
  // Per-plan state of the transport's own (host mirrors, buffer registrations), made once the
  // plan's buffers are allocated; unprepare() undoes what must be undone before they are freed.
  virtual void prepare(const Plan& /*plan*/, Prepared& /*p*/) {}
  virtual void unprepare(Prepared& /*p*/) {}

  // An iteration of buffers.plan() starts; the buffers stay valid until the next begin().
  virtual void begin(const PlanBuffers& buffers) = 0;
  // The iteration's origin event was recorded on the compute stream (not for graph replays).
  virtual void origin_recorded(cudaEvent_t /*origin*/, double /*host_before*/) {}
  // How closely host-timed tasks' times agree with the stream-timed ones (seconds): the host
  // clock's bracket around the origin. 0 where nothing is host-timed.
  virtual double host_alignment() const { return 0; }
  // Queues transfer task `t` on `stream`.
  virtual void enqueue(const Task& t, cudaStream_t stream) = 0;
  // The iteration begun last finished (outside its timing).
  virtual void iteration_done() {}
  // What the results file records of how the transfers ran: "key=value" lines, per case (the
  // prepared plan's) and per run.
  virtual std::vector<std::string> case_facts(const Prepared& /*p*/) const { return {}; }
  virtual std::vector<std::string> run_facts() const { return {}; }
  // Why CUPTI's kernel records cannot time this transport's tasks ("" where they can): the
  // backend then times every task with events.
  virtual std::string kernel_timing_refused() const { return ""; }
  // The SMs the prepared plan's transfers take; -1 where the transport does not say.
  virtual int transfer_sms(const Prepared& /*p*/) const { return -1; }

  virtual bool runs_on_host(const Task& /*t*/) const { return false; }
  // Queues host-run task `t` behind `wait_for` (valid until the iteration finishes).
  virtual void launch_on_host(const Task& /*t*/, const std::vector<int>& /*wait_for*/) {}
  // Waits up to `timeout_s` for host-run task `task`: false if it did not finish or the
  // iteration was aborted. Throws the fault the host thread hit, if any.
  virtual bool wait_for_host(int /*task*/, double /*timeout_s*/) { return true; }
  // Host-run task times, seconds from the iteration's origin: NaN until set.
  virtual double host_start(int /*task*/) const { return std::numeric_limits<double>::quiet_NaN(); }
  virtual double host_end(int /*task*/) const { return std::numeric_limits<double>::quiet_NaN(); }
  // What a stuck host-run task is waiting for, for timeout messages.
  virtual std::string host_state() const { return ""; }
  // Whether host-run work is still queued or running; throws the fault it hit, if any.
  virtual bool host_busy() { return false; }

  // A fault the transport's device work reported asynchronously: what failed ("NCCL error
  // while", which the backend follows with the tasks each stream was in) and why.
  struct AsyncError {
    std::string what, why;
  };
  virtual std::optional<AsyncError> async_error() { return std::nullopt; }
  // Ends every transfer in flight, so that nothing waits for a peer that will never come.
  virtual void abort() = 0;
  // Before teardown: stops host-run work, waiting for it a few seconds at most.
  virtual void stop() {}
};

}  // namespace fob
