// Stream capture and graphs (CUDA Runtime API, "Stream Management": cudaStreamBeginCapture,
// cudaStreamEndCapture; "Graph Management"; CUDA C++ Programming Guide, "Creating a Graph Using
// Stream Capture"). Ops on a capturing stream become nodes depending on the stream's frontier;
// events recorded and waited during capture fork and join streams into the capture; a replay
// runs each captured stream's nodes on a lane of its own, with the captured edges as waits and
// vector clocks, so the race detector applies to replays as to streams.
#include <algorithm>
#include <atomic>
#include <map>
#include <set>

#include "internal.h"

namespace fobmodel::detail {

struct Node {
  Op op;
  std::vector<size_t> deps;
  size_t lane = 0;
  uint64_t id = 0;
  cudaEvent_t records = nullptr;  // an external event record node (cudaEventRecordExternal)
};

struct Capture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  Stream* origin = nullptr;
  std::map<Stream*, size_t> lanes;
  std::vector<Node> nodes;
  std::vector<cudaEvent_t> events;
  bool invalidated = false;
};

}  // namespace fobmodel::detail

struct CUgraph_st {
  std::vector<fobmodel::detail::Node> nodes;
  size_t lanes = 0;
  int device = 0;
};

struct CUgraphExec_st {
  std::vector<fobmodel::detail::Node> nodes;
  std::vector<std::unique_ptr<fobmodel::detail::Stream>> lanes;
};

namespace fobmodel::detail {
namespace {

std::set<Capture*>& active_captures() {
  static auto* instance = new std::set<Capture*>;
  return *instance;
}

std::atomic<uint64_t> next_node{1};

size_t add_node(Capture& capture, Stream& stream, Op op, cudaEvent_t records) {
  Node node;
  op.correlation = current_correlation();
  op.task = current_task();
  op.range = current_range();
  node.op = std::move(op);
  node.deps = stream.frontier;
  node.lane = capture.lanes.at(&stream);
  node.id = next_node++;
  node.records = records;
  capture.nodes.push_back(std::move(node));
  if (hooks().graph_node) hooks().graph_node(capture.nodes.back().id, 0);
  stream.frontier = {capture.nodes.size() - 1};
  return capture.nodes.size() - 1;
}

void join_capture(Capture& capture, Stream& stream, std::vector<size_t> frontier) {
  stream.capture = &capture;
  stream.frontier = std::move(frontier);
  capture.lanes.emplace(&stream, capture.lanes.size());
}

// Every node some frontier node depends on, itself included.
std::set<size_t> ancestors(const Capture& capture, const std::vector<size_t>& frontier) {
  std::set<size_t> seen;
  std::vector<size_t> pending = frontier;
  while (!pending.empty()) {
    const size_t node = pending.back();
    pending.pop_back();
    if (!seen.insert(node).second) continue;
    for (size_t dep : capture.nodes[node].deps) pending.push_back(dep);
  }
  return seen;
}

// Ends the capture for every stream in it and forgets its events' captured records.
std::unique_ptr<Capture> finish(Capture* capture) {
  for (auto& [stream, lane] : capture->lanes) {
    stream->capture = nullptr;
    stream->frontier.clear();
  }
  for (cudaEvent_t event : capture->events) {
    if (live_event(event) && event_state(event).capture == capture) {
      event_state(event).capture = nullptr;
    }
  }
  active_captures().erase(capture);
  return std::unique_ptr<Capture>(capture);
}

// Every forked stream's last work must be joined back into the origin stream: "stream must be
// the stream the capture began on and all other streams must have joined" — otherwise
// cudaErrorStreamCaptureUnjoined (cudaStreamEndCapture).
bool all_joined(const Capture& capture) {
  const std::set<size_t> joined = ancestors(capture, capture.origin->frontier);
  for (const auto& [stream, lane] : capture.lanes) {
    for (size_t node : stream->frontier) {
      if (!joined.contains(node)) return false;
    }
  }
  return true;
}

}  // namespace

// "Potentially unsafe API calls" are prohibited while a global capture is active, or from the
// capturing thread while a thread-local one is; relaxed mode allows them; synchronising or
// querying a capturing stream is never legal; the legacy stream may not be used while a
// blocking stream captures (cudaStreamBeginCapture; cudaStreamCaptureMode;
// cudaErrorStreamCaptureImplicit). The offending capture is invalidated.
cudaError_t capture_forbids(const char* call, Stream* stream, bool uses_legacy, bool synchronizes) {
  (void)call;
  if (synchronizes && stream != nullptr && stream->capture != nullptr) {
    stream->capture->invalidated = true;
    return cudaErrorStreamCaptureUnsupported;
  }
  for (Capture* capture : active_captures()) {
    if (uses_legacy) {
      for (const auto& [member, lane] : capture->lanes) {
        if ((member->flags & cudaStreamNonBlocking) == 0 &&
            (stream == nullptr || member->device == stream->device)) {
          capture->invalidated = true;
          return cudaErrorStreamCaptureImplicit;
        }
      }
    }
    const bool unsafe_here = capture->mode == cudaStreamCaptureModeGlobal ||
                             (capture->mode == cudaStreamCaptureModeThreadLocal &&
                              capture->thread == std::this_thread::get_id());
    if (synchronizes && unsafe_here) {
      capture->invalidated = true;
      return cudaErrorStreamCaptureUnsupported;
    }
  }
  return cudaSuccess;
}

cudaError_t capture_op(Stream& stream, Op op) {
  Capture& capture = *stream.capture;
  if (capture.invalidated) return cudaErrorStreamCaptureInvalidated;
  add_node(capture, stream, std::move(op), nullptr);
  return cudaSuccess;
}

cudaError_t capture_record_event(Stream& stream, cudaEvent_t event, bool external) {
  Capture& capture = *stream.capture;
  if (capture.invalidated) return cudaErrorStreamCaptureInvalidated;
  if (external) {
    Op op;
    op.name = "cudaEventRecord (external node)";
    add_node(capture, stream, std::move(op), event);
  }
  EventState& state = event_state(event);
  state.capture = &capture;
  state.captured_frontier = stream.frontier;
  capture.events.push_back(event);
  return cudaSuccess;
}

cudaError_t capture_wait_event(Stream& stream, EventState& event) {
  if (event.capture == nullptr) {
    // Work recorded outside the capture cannot become a dependency of a graph node
    // (cudaErrorStreamCaptureIsolation); an event never recorded orders nothing.
    if (!event.recorded) return cudaSuccess;
    stream.capture->invalidated = true;
    return cudaErrorStreamCaptureIsolation;
  }
  Capture& capture = *event.capture;
  if (capture.invalidated) return cudaErrorStreamCaptureInvalidated;
  if (stream.capture == nullptr) {
    join_capture(capture, stream, event.captured_frontier);
    return cudaSuccess;
  }
  if (stream.capture != &capture) {
    capture.invalidated = stream.capture->invalidated = true;
    return cudaErrorStreamCaptureMerge;
  }
  for (size_t node : event.captured_frontier) {
    if (std::find(stream.frontier.begin(), stream.frontier.end(), node) == stream.frontier.end()) {
      stream.frontier.push_back(node);
    }
  }
  return cudaSuccess;
}

}  // namespace fobmodel::detail

using namespace fobmodel::detail;
using fobmodel::record_error;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode mode) {
  FOB_RUNTIME_CALL(cudaStreamBeginCapture, v10000);
  std::lock_guard lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr) return record_error(cudaErrorInvalidResourceHandle);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return record_error(cudaErrorInvalidValue);
  }
  // "Capture may not be initiated if stream is cudaStreamLegacy" (cudaStreamBeginCapture).
  if (stream->legacy) return record_error(cudaErrorStreamCaptureUnsupported);
  if (stream->capture != nullptr) return record_error(cudaErrorIllegalState);
  auto* capture = new Capture;
  capture->mode = mode;
  capture->thread = std::this_thread::get_id();
  capture->origin = stream;
  join_capture(*capture, *stream, {});
  active_captures().insert(capture);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* pGraph) {
  FOB_RUNTIME_CALL(cudaStreamEndCapture, v10000);
  if (pGraph == nullptr) return record_error(cudaErrorInvalidValue);
  *pGraph = nullptr;
  std::lock_guard lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr) return record_error(cudaErrorInvalidResourceHandle);
  if (stream->capture == nullptr) return record_error(cudaErrorIllegalState);
  Capture* capture = stream->capture;
  if (capture->origin != stream) return record_error(cudaErrorStreamCaptureUnmatched);
  if (capture->mode != cudaStreamCaptureModeRelaxed &&
      capture->thread != std::this_thread::get_id()) {
    return record_error(cudaErrorStreamCaptureWrongThread);
  }
  const bool joined = all_joined(*capture);
  std::unique_ptr<Capture> ended = finish(capture);
  if (ended->invalidated) return record_error(cudaErrorStreamCaptureInvalidated);
  if (!joined) return record_error(cudaErrorStreamCaptureUnjoined);
  auto* graph = new CUgraph_st;
  graph->nodes = std::move(ended->nodes);
  graph->lanes = ended->lanes.size();
  graph->device = stream->device;
  *pGraph = graph;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  FOB_RUNTIME_CALL(cudaGraphDestroy, v10000);
  if (graph == nullptr) return record_error(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  FOB_RUNTIME_CALL(cudaGraphInstantiate, v12000);
  (void)flags;  // cudaGraphInstantiateFlagUseNodePriority: priorities are accepted, not modelled
  if (pGraphExec == nullptr || graph == nullptr) return record_error(cudaErrorInvalidValue);
  auto exec = std::make_unique<CUgraphExec_st>();
  exec->nodes = graph->nodes;
  for (Node& node : exec->nodes) {
    const uint64_t original = node.id;
    node.id = next_node++;
    if (hooks().graph_node) hooks().graph_node(node.id, original);
  }
  for (size_t lane = 0; lane < graph->lanes; ++lane) {
    exec->lanes.push_back(std::make_unique<Stream>(graph->device, cudaStreamNonBlocking, 0, false));
    exec->lanes.back()->label = "graph lane " + std::to_string(lane);
  }
  *pGraphExec = exec.release();
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  FOB_RUNTIME_CALL(cudaGraphExecDestroy, v10000);
  if (graphExec == nullptr) return record_error(cudaErrorInvalidValue);
  delete graphExec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t handle) {
  FOB_RUNTIME_CALL(cudaGraphLaunch, v10000);
  if (graphExec == nullptr) return record_error(cudaErrorInvalidValue);
  std::lock_guard lock(model_mutex());
  Stream* stream = resolve_stream(handle);
  if (stream == nullptr) return record_error(cudaErrorInvalidResourceHandle);
  if (stream->capture != nullptr) return record_error(cudaErrorStreamCaptureUnsupported);
  fobmodel::Op start;
  start.name = "cudaGraphLaunch";
  const CompletionPtr started = enqueue_locked(*stream, std::move(start), {});
  const VectorClock launch_clock = stream->clock;
  const uint64_t launched_ns = fobmodel::clock_ns();
  std::vector<CompletionPtr> done;
  std::vector<VectorClock> clocks;
  for (const Node& node : graphExec->nodes) {
    Stream& lane = *graphExec->lanes[node.lane];
    auto queued = std::make_unique<QueuedOp>();
    queued->op = node.op;
    queued->after = {started};
    lane.clock.join(launch_clock);
    for (size_t dep : node.deps) {
      queued->after.push_back(done[dep]);
      lane.clock.join(clocks[dep]);
    }
    lane.clock.tick(lane.agent);
    queued->clock = lane.clock;
    queued->agent = lane.agent;
    queued->stream_id = stream->id;
    queued->graph_node = node.id;
    queued->enqueue_ns = launched_ns;
    queued->identity = std::make_shared<OpIdentity>(OpIdentity{
        node.op.name, node.op.task, stream->label + " (" + lane.label + ")", next_sequence()});
    done.push_back(queued->done);
    clocks.push_back(queued->clock);
    if (node.records != nullptr && live_event(node.records)) {
      EventState& state = event_state(node.records);
      state.point = queued->done;
      state.clock = queued->clock;
      state.recorded = true;
    }
    lane.push(std::move(queued));
  }
  for (const VectorClock& clock : clocks) stream->clock.join(clock);
  fobmodel::Op end;
  end.name = "cudaGraphLaunch (end)";
  enqueue_locked(*stream, std::move(end), std::move(done));
  return cudaSuccess;
}

}  // extern "C"
