// Streams, events and host synchronisation (CUDA Runtime API, "Stream Management" and "Event
// Management"). Every host synchronisation joins the synchronised point's vector clock into
// the calling thread's, which is how it orders later work for the race detector.
#include <map>

#include "internal.h"

// The opaque handles of the real headers, defined here: an event handle is its state.
struct CUevent_st {
  fobmodel::detail::EventState state;
  int device = 0;
};

namespace fobmodel::detail {

cudaStream_t add_stream(std::unique_ptr<Stream> stream);
std::unique_ptr<Stream> remove_stream(cudaStream_t stream);

namespace {

std::map<cudaEvent_t, std::unique_ptr<CUevent_st>>& events() {
  static auto* instance = new std::map<cudaEvent_t, std::unique_ptr<CUevent_st>>;
  return *instance;
}

// cudaDeviceGetStreamPriorityRange: lower numbers are higher priorities; a priority outside the
// range is clamped (cudaStreamCreateWithPriority).
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

cudaError_t synchronize_stream(cudaStream_t handle) {
  std::unique_lock lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t e = capture_forbids("cudaStreamSynchronize", stream, stream->legacy);
      e != cudaSuccess) {
    return e;
  }
  const CompletionPtr point = stream->last;
  const VectorClock clock = stream->clock;
  lock.unlock();
  host_wait(point, clock);
  return cudaSuccess;
}

cudaError_t record_event(cudaEvent_t event, cudaStream_t handle, unsigned flags) {
  if (flags != 0 && flags != cudaEventRecordExternal) return cudaErrorInvalidValue;
  std::lock_guard lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr || !live_event(event)) return cudaErrorInvalidResourceHandle;
  // "event and stream must be on the same CUDA context" (cudaEventRecord).
  if (event->device != stream->device) return cudaErrorInvalidResourceHandle;
  EventState& state = event->state;
  if (stream->capture != nullptr) {
    return capture_record_event(*stream, event, flags == cudaEventRecordExternal);
  }
  if (stream->legacy) {
    if (const cudaError_t e = capture_forbids("cudaEventRecord", stream, true, false);
        e != cudaSuccess) {
      return e;
    }
  }
  fobmodel::Op op;
  op.name = "cudaEventRecord";
  state.point = enqueue_locked(*stream, std::move(op), {});
  state.clock = stream->clock;
  state.recorded = true;
  state.capture = nullptr;
  return cudaSuccess;
}

}  // namespace

bool live_event(cudaEvent_t event) {
  return events().contains(event);
}

EventState& event_state(cudaEvent_t event) {
  return event->state;
}

}  // namespace fobmodel::detail

using namespace fobmodel::detail;
using fobmodel::record_error;

extern "C" {

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  FOB_RUNTIME_CALL(cudaDeviceGetStreamPriorityRange, v5050);
  if (leastPriority) *leastPriority = kLeastPriority;
  if (greatestPriority) *greatestPriority = kGreatestPriority;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  FOB_RUNTIME_CALL(cudaStreamCreateWithPriority, v5050);
  if (pStream == nullptr || (flags & ~unsigned{cudaStreamNonBlocking}) != 0) {
    return record_error(cudaErrorInvalidValue);
  }
  const int clamped = std::min(kLeastPriority, std::max(kGreatestPriority, priority));
  std::lock_guard lock(model_mutex());
  *pStream = add_stream(std::make_unique<Stream>(current_device(), flags, clamped, false));
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaStreamDestroy, v5050);
  std::unique_ptr<Stream> removed;
  {
    std::lock_guard lock(model_mutex());
    Stream* live = resolve_stream(stream);
    if (live == nullptr || live->legacy) return record_error(cudaErrorInvalidResourceHandle);
    removed = remove_stream(stream);
  }
  // Work already queued still runs ("the function will return immediately and the resources
  // will be released automatically once the device has completed all work in stream"); the
  // model drains it before returning, which only makes the call slower.
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaStreamSynchronize, v3020);
  return record_error(synchronize_stream(stream));
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  FOB_RUNTIME_CALL(cudaStreamQuery, v3020);
  std::lock_guard lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr) return record_error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = capture_forbids("cudaStreamQuery", stream, stream->legacy);
      e != cudaSuccess) {
    return record_error(e);
  }
  // cudaErrorNotReady is not an error of the call: it is not recorded for cudaGetLastError.
  if (stream->last && !stream->last->ready()) return cudaErrorNotReady;
  host_clock().join(stream->clock);
  note_host_synchronised();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaStreamWaitEvent, v3020);
  if (flags != 0 && flags != cudaEventWaitExternal) return record_error(cudaErrorInvalidValue);
  std::lock_guard lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr || !live_event(event)) return record_error(cudaErrorInvalidResourceHandle);
  EventState& state = event->state;
  if (stream->capture != nullptr || state.capture != nullptr) {
    return record_error(capture_wait_event(*stream, state));
  }
  // "event may be from a different device than stream"; an event never recorded is complete,
  // so the wait has nothing to wait for (cudaStreamWaitEvent, cudaEventQuery).
  if (!state.recorded) return cudaSuccess;
  stream->clock.join(state.clock);
  fobmodel::Op op;
  op.name = "cudaStreamWaitEvent";
  enqueue_locked(*stream, std::move(op), {state.point});
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  FOB_RUNTIME_CALL(cudaDeviceSynchronize, v3020);
  std::vector<std::pair<CompletionPtr, VectorClock>> points;
  {
    std::lock_guard lock(model_mutex());
    if (const cudaError_t e = capture_forbids("cudaDeviceSynchronize", nullptr, false);
        e != cudaSuccess) {
      return record_error(e);
    }
    for (Stream* stream : device_streams(current_device())) {
      points.emplace_back(stream->last, stream->clock);
    }
  }
  for (const auto& [point, clock] : points) host_wait(point, clock);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaEventCreateWithFlags, v3020);
  constexpr unsigned kKnown =
      cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  // cudaEventInterprocess "must be specified along with cudaEventDisableTiming".
  if (event == nullptr || (flags & ~kKnown) != 0 ||
      ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0)) {
    return record_error(cudaErrorInvalidValue);
  }
  std::lock_guard lock(model_mutex());
  auto state = std::make_unique<CUevent_st>();
  state->state.flags = flags;
  state->device = current_device();
  *event = state.get();
  events()[*event] = std::move(state);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  FOB_RUNTIME_CALL(cudaEventCreate, v3020);
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  FOB_RUNTIME_CALL(cudaEventDestroy, v3020);
  std::lock_guard lock(model_mutex());
  if (events().erase(event) == 0) return record_error(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaEventRecord, v3020);
  return record_error(record_event(event, stream, 0));
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaEventRecordWithFlags, v11010);
  return record_error(record_event(event, stream, flags));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  FOB_RUNTIME_CALL(cudaEventQuery, v3020);
  std::lock_guard lock(model_mutex());
  if (!live_event(event)) return record_error(cudaErrorInvalidResourceHandle);
  EventState& state = event->state;
  if (state.capture != nullptr) {
    // An event recorded in a capture stands for graph nodes, not for completed work.
    return record_error(cudaErrorStreamCaptureUnsupported);
  }
  if (!state.recorded) return cudaSuccess;
  if (!state.point->ready()) return cudaErrorNotReady;
  host_clock().join(state.clock);
  note_host_synchronised();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  FOB_RUNTIME_CALL(cudaEventSynchronize, v3020);
  CompletionPtr point;
  VectorClock clock;
  {
    std::lock_guard lock(model_mutex());
    if (!live_event(event)) return record_error(cudaErrorInvalidResourceHandle);
    EventState& state = event->state;
    if (state.capture != nullptr) return record_error(cudaErrorStreamCaptureUnsupported);
    // "If cudaEventRecord() has not been called on event, cudaSuccess is returned."
    if (!state.recorded) return cudaSuccess;
    point = state.point;
    clock = state.clock;
  }
  host_wait(point, clock);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  FOB_RUNTIME_CALL(cudaEventElapsedTime, v3020);
  if (ms == nullptr) return record_error(cudaErrorInvalidValue);
  std::lock_guard lock(model_mutex());
  if (!live_event(start) || !live_event(end)) return record_error(cudaErrorInvalidResourceHandle);
  const EventState& first = start->state;
  const EventState& second = end->state;
  // "If either event was created with the cudaEventDisableTiming flag, ... or if either event
  // has not been recorded, cudaErrorInvalidResourceHandle is returned"; "If either event has
  // not completed yet, cudaErrorNotReady" (cudaEventElapsedTime).
  if (((first.flags | second.flags) & cudaEventDisableTiming) != 0 || !first.recorded ||
      !second.recorded) {
    return record_error(cudaErrorInvalidResourceHandle);
  }
  if (!first.point->ready() || !second.point->ready()) return record_error(cudaErrorNotReady);
  const double nanoseconds =
      static_cast<double>(second.point->end_ns()) - static_cast<double>(first.point->end_ns());
  *ms = static_cast<float>(nanoseconds / 1e6);
  return cudaSuccess;
}

}  // extern "C"
