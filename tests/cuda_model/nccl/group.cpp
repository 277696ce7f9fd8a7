// Calls, groups, and the ops they put on streams.
//
// "ncclGroupStart: All subsequent calls to NCCL until ncclGroupEnd will not block due to
// inter-CPU synchronization. ncclGroupEnd: Returns when all operations since ncclGroupStart have
// been processed. This means the communication primitives have been enqueued to the provided
// streams, but are not necessarily complete." (NCCL API, Group Calls,
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/group.html). The model keeps a
// group's calls per thread and, at the outermost ncclGroupEnd, puts one op per (communicator,
// stream) on its stream: the op runs every call of the group together (engine.cpp). A call
// outside a group is an op of its own, launched as NCCL launches its kernel (cuLaunchKernelEx,
// which is what CUPTI records of it). Launching first logs the connections the calls need
// (connect.cpp) and gives the op its note (the communicator, its channels, the bytes sent,
// whether every buffer was registered).
#include <cupti_driver_cbid.h>

#include <map>
#include <utility>
#include <vector>

#include "api.h"
#include "fobmodel/model.h"

namespace fobnccl {
namespace {

struct Pending {
  ncclComm_t comm;
  cudaStream_t stream;
  Call call;
};

struct GroupState {
  int depth = 0;
  std::vector<Pending> pending;
  ncclResult_t error = ncclSuccess;
};
thread_local GroupState g_group;

// Every byte the op reads and writes, for the runtime's bounds and race checks.
void add_footprint(const Call& c, int nranks, std::vector<fobmodel::Footprint>* fp) {
  const size_t bytes = c.count * elem_size(c.dtype);
  if (bytes == 0) return;
  const size_t all = bytes * static_cast<size_t>(nranks);
  switch (c.kind) {
    case Kind::send:
      fp->push_back({c.send, bytes, 1, 0, false});
      break;
    case Kind::recv:
      fp->push_back({c.recv, bytes, 1, 0, true});
      break;
    case Kind::all_gather:
      fp->push_back({c.send, bytes, 1, 0, false});
      fp->push_back({c.recv, all, 1, 0, true});
      break;
    case Kind::reduce_scatter:
      fp->push_back({c.send, all, 1, 0, false});
      fp->push_back({c.recv, bytes, 1, 0, true});
      break;
  }
}

// NCCL's kernel names, so that a CUPTI record reads as it would on a GPU.
std::string kernel_name(const std::vector<Call>& calls) {
  bool p2p = false, gather = false, scatter = false;
  for (const Call& c : calls) {
    p2p |= c.kind == Kind::send || c.kind == Kind::recv;
    gather |= c.kind == Kind::all_gather;
    scatter |= c.kind == Kind::reduce_scatter;
  }
  std::string name = p2p && !gather && !scatter   ? "ncclDevKernel_SendRecv"
                     : gather && !p2p && !scatter ? "ncclDevKernel_AllGather_RING_LL"
                     : scatter && !p2p && !gather ? "ncclDevKernel_ReduceScatter_Sum_RING_LL"
                                                  : "ncclDevKernel_Generic";
  name += ":";
  for (size_t i = 0; i < calls.size() && i < 8; ++i) {
    name += ' ';
    name += describe(calls[i]);
  }
  if (calls.size() > 8) name += " ... (" + std::to_string(calls.size()) + " calls)";
  return name;
}

}  // namespace
}  // namespace fobnccl

// The runtime model need not export cudaStreamIsCapturing (the cuda module does not call it):
// where it does not, no op is counted for ncclCommDestroy to wait for.
#pragma weak cudaStreamIsCapturing

namespace fobnccl {
namespace {

// Whether an op put on `stream` is counted: not when it is captured (a graph runs it later,
// any number of times), and never when the runtime cannot say.
bool counted(cudaStream_t stream) {
  if (!&cudaStreamIsCapturing) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
         status == cudaStreamCaptureStatusNone;
}

ncclResult_t launch(ncclComm_t comm, cudaStream_t stream, std::vector<Call> calls) {
  fobmodel::ApiCall api(fobmodel::Domain::driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                        "cuLaunchKernelEx");
  connect(*comm, calls);
  fobmodel::Op op;
  op.name = kernel_name(calls);
  op.activity = fobmodel::Activity::kernel;
  op.note = op_note(*comm, calls);
  for (const Call& c : calls) add_footprint(c, comm->engine->nranks(), &op.footprint);
  // A replayed graph runs the op again: it matches afresh each time, as NCCL's captured kernels
  // do, and needs the communicator to live ("NCCL User Guide, Using NCCL with CUDA Graphs").
  std::shared_ptr<Comm> engine = comm->engine;
  const bool count = counted(stream);
  op.run = [engine, calls, count, comm, name = op.name]() {
    if (engine->destroyed() && !engine->aborted()) {
      fobmodel::violation("nccl", name +
                                      " runs on a communicator that ncclCommDestroy has "
                                      "destroyed (NCCL API, ncclCommDestroy: the "
                                      "communicator must outlive its operations)");
    }
    engine->run(calls);
    if (count) comm->queued.fetch_sub(1);
  };
  if (count) comm->queued.fetch_add(1);
  const cudaError_t e = fobmodel::enqueue(stream, std::move(op));
  if (e != cudaSuccess) {
    if (count) comm->queued.fetch_sub(1);
    return warn(ncclUnhandledCudaError,
                std::string("launching ") + kernel_name(calls) + ": " + cudaGetErrorString(e));
  }
  return ncclSuccess;
}

ncclResult_t flush(std::vector<Pending> pending) {
  // One op per (communicator, stream), its calls in the order they were made.
  std::map<std::pair<ncclComm_t, cudaStream_t>, std::vector<Call>> ops;
  std::vector<std::pair<ncclComm_t, cudaStream_t>> order;
  for (const Pending& p : pending) {
    auto key = std::make_pair(p.comm, p.stream);
    if (!ops.count(key)) order.push_back(key);
    ops[key].push_back(p.call);
  }
  ncclResult_t result = ncclSuccess;
  for (const auto& key : order) {
    const ncclResult_t r = launch(key.first, key.second, std::move(ops[key]));
    if (result == ncclSuccess) result = r;
  }
  return result;
}

}  // namespace

int group_depth() {
  return g_group.depth;
}

ncclResult_t submit(ncclComm_t comm, cudaStream_t stream, const Call& call) {
  if (g_group.depth == 0) return flush({Pending{comm, stream, call}});
  g_group.pending.push_back({comm, stream, call});
  return ncclSuccess;
}

}  // namespace fobnccl

using fobnccl::g_group;

extern "C" ncclResult_t ncclGroupStart() {
  ++g_group.depth;
  return ncclSuccess;
}

// An error in a call of the group is ncclGroupEnd's result too, and the group's calls are
// dropped, as NCCL does.
extern "C" ncclResult_t ncclGroupEnd() {
  if (g_group.depth == 0) {
    return fobnccl::warn(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  }
  if (--g_group.depth > 0) return ncclSuccess;
  std::vector<fobnccl::Pending> pending = std::move(g_group.pending);
  g_group.pending.clear();
  const ncclResult_t error = g_group.error;
  g_group.error = ncclSuccess;
  if (error != ncclSuccess) return error;
  return fobnccl::flush(std::move(pending));
}

namespace fobnccl {
void note_group_error(ncclResult_t r) {
  if (g_group.depth > 0 && g_group.error == ncclSuccess) g_group.error = r;
}
}  // namespace fobnccl
