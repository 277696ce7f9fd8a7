// Copies and memsets (CUDA Runtime API, "Memory Management"), as ops with their footprints.
#include <cstring>

#include "internal.h"

namespace fobmodel::detail {
namespace {

bool on_device(const void* p) {
  return memory_of(p) == Memory::device;
}

bool imported(const void* p, int* pid = nullptr, int* device = nullptr) {
  int owner = 0, owner_device = 0;
  uint64_t offset = 0;
  if (!imported_owner(p, &owner, &owner_device, &offset)) return false;
  if (pid) *pid = owner;
  if (device) *device = owner_device;
  return true;
}

// Memory imported with cudaIpcOpenMemHandle is another GPU's: the model admits host-to-device
// copies into it only as cudaMemcpyDefault. A peer's buffer is filled device to device by a copy
// engine; cudaMemcpyHostToDevice naming it says the program took it for memory of its own device.
cudaError_t check_imported_direction(const char* call, void* dst, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyHostToDevice || !imported(dst)) return cudaSuccess;
  violation("memcpy-kind", std::string(call) + " (task \"" + current_task() +
                               "\"): cudaMemcpyHostToDevice into " + pointer_text(dst) +
                               ", memory imported with cudaIpcOpenMemHandle: a peer's memory is "
                               "copied device to device");
  return cudaErrorInvalidValue;
}

// "Calling cudaMemcpy() with dst and src pointers that do not match the direction of the copy
// results in an undefined behavior" (cudaMemcpy): the model reports it (rule "memcpy-kind").
cudaError_t check_direction(const char* call, void* dst, const void* src, cudaMemcpyKind kind) {
  bool want_dst_device = false;
  bool want_src_device = false;
  switch (kind) {
    case cudaMemcpyHostToHost:
      break;
    case cudaMemcpyHostToDevice:
      want_dst_device = true;
      break;
    case cudaMemcpyDeviceToHost:
      want_src_device = true;
      break;
    case cudaMemcpyDeviceToDevice:
      want_dst_device = want_src_device = true;
      break;
    case cudaMemcpyDefault:
      return cudaSuccess;
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
  if (on_device(dst) == want_dst_device && on_device(src) == want_src_device) {
    return check_imported_direction(call, dst, kind);
  }
  violation("memcpy-kind", std::string(call) + " (task \"" + current_task() + "\"): kind " +
                               std::to_string(kind) + " but dst " + pointer_text(dst) + " is " +
                               (on_device(dst) ? "device" : "host") + " memory and src " +
                               pointer_text(src) + " is " + (on_device(src) ? "device" : "host") +
                               " memory");
  return cudaErrorInvalidValue;
}

// A copy with an imported end runs on a copy engine between two GPUs, not on SMs: named
// "<call> (peer)", with the peer in its note.
void mark_peer(Op& op, const void* dst, const void* src, size_t bytes) {
  int pid = 0, device = 0;
  if (!imported(dst, &pid, &device) && !imported(src, &pid, &device)) return;
  op.name += " (peer)";
  op.note = "engine=copy peer=" + std::to_string(pid) + "/" + std::to_string(device) +
            " bytes=" + std::to_string(bytes);
}

struct Submitted {
  CompletionPtr point;
  VectorClock clock;
};

// Queues (or captures) `op` on `handle` with the model's checks; `sync`: the host waits for it.
cudaError_t submit(cudaStream_t handle, Op op, bool sync) {
  Submitted submitted;
  {
    std::lock_guard lock(model_mutex());
    Stream* stream = resolve_stream(handle);
    if (stream == nullptr) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t e = check_bounds(op); e != cudaSuccess) return e;
    if (sync || stream->legacy) {
      if (const cudaError_t e = capture_forbids(op.name.c_str(), stream, stream->legacy, sync);
          e != cudaSuccess) {
        return e;
      }
    }
    if (stream->capture != nullptr) return capture_op(*stream, std::move(op));
    submitted.point = enqueue_locked(*stream, std::move(op), {});
    submitted.clock = stream->clock;
  }
  if (sync) host_wait(submitted.point, submitted.clock);
  return cudaSuccess;
}

Op copy_op(const char* name, void* dst, const void* src, size_t count) {
  Op op;
  op.name = name;
  op.activity = Activity::memcpy;
  op.footprint = {Footprint{src, count, 1, count, false}, Footprint{dst, count, 1, count, true}};
  if (memory_of(src) == Memory::other) {
    // Pageable source: the runtime stages it before returning, so the host may reuse it at
    // once ("API synchronization behavior": pageable host to device memory).
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + count);
    op.run = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
  } else {
    op.run = [dst, src, count] { std::memcpy(dst, src, count); };
  }
  mark_peer(op, dst, src, count);
  return op;
}

cudaError_t copy(const char* name, void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                 cudaStream_t stream, bool sync) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  if (const cudaError_t e = check_direction(name, dst, src, kind); e != cudaSuccess) return e;
  // Device to pageable host memory: "the function will return only once the copy has
  // completed" ("API synchronization behavior", asynchronous memcpy).
  const bool to_pageable = memory_of(dst) == Memory::other && on_device(src);
  return submit(stream, copy_op(name, dst, src, count), sync || to_pageable);
}

cudaError_t set(const char* name, void* dst, int value, size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (!on_device(dst)) return cudaErrorInvalidValue;
  Op op;
  op.name = name;
  op.activity = Activity::memset;
  op.footprint = {Footprint{dst, count, 1, count, true}};
  op.run = [dst, value, count] { std::memset(dst, value, count); };
  // The memset functions are asynchronous with respect to the host for device memory ("API
  // synchronization behavior", memset), cudaMemset too: it runs on the legacy stream.
  return submit(stream, std::move(op), false);
}

}  // namespace
}  // namespace fobmodel::detail

using namespace fobmodel::detail;
using fobmodel::record_error;

extern "C" {

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  FOB_RUNTIME_CALL(cudaMemcpy, v3020);
  // "This function exhibits synchronous behavior for most use cases" (cudaMemcpy): the model
  // always waits, on the legacy default stream.
  return record_error(copy("cudaMemcpy", dst, src, count, kind, nullptr, true));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaMemcpyAsync, v3020);
  return record_error(copy("cudaMemcpyAsync", dst, src, count, kind, stream, false));
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaMemcpy2DAsync, v3020);
  if (width == 0 || height == 0) return cudaSuccess;
  // "width must not exceed either dpitch or spitch"; "returns an error if dpitch or spitch
  // exceeds the maximum allowed" (cudaMemcpy2D): cudaDeviceProp::memPitch.
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, current_device());
  if (width > dpitch || width > spitch || dpitch > prop.memPitch || spitch > prop.memPitch) {
    return record_error(cudaErrorInvalidPitchValue);
  }
  if (dst == nullptr || src == nullptr) return record_error(cudaErrorInvalidValue);
  if (const cudaError_t e = check_direction("cudaMemcpy2DAsync", dst, src, kind);
      e != cudaSuccess) {
    return record_error(e);
  }
  fobmodel::Op op;
  op.name = "cudaMemcpy2DAsync";
  op.activity = fobmodel::Activity::memcpy;
  op.footprint = {fobmodel::Footprint{src, width, height, spitch, false},
                  fobmodel::Footprint{dst, width, height, dpitch, true}};
  op.run = [=] {
    for (size_t row = 0; row < height; ++row) {
      std::memcpy(static_cast<char*>(dst) + row * dpitch,
                  static_cast<const char*>(src) + row * spitch, width);
    }
  };
  mark_peer(op, dst, src, width * height);
  return record_error(submit(stream, std::move(op), false));
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  FOB_RUNTIME_CALL(cudaMemset, v3020);
  return record_error(set("cudaMemset", devPtr, value, count, nullptr));
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaMemsetAsync, v3020);
  return record_error(set("cudaMemsetAsync", devPtr, value, count, stream));
}

}  // extern "C"
