// Stream memory operations (cuda.h, "Stream Memory Operations": cuStreamWaitValue32,
// cuStreamWriteValue32) and cuMemHostGetDevicePointer, with the signatures of cuda.h's _v2
// entry points, which the cuda backend looks up with dlsym. The wait is an op on the stream whose
// run blocks the stream's thread until the 32-bit value satisfies the condition. "Synchronization
// ordering established through this API is not visible to CUDA" (cuStreamWaitValue32): the wait
// gives the race detector no happens-before edge, so work it orders is still a race unless an
// event orders it too, as the same warning asks ("should also have that order expressed with
// CUDA-visible dependencies such as events").
#include <cuda.h>
#include <cupti_driver_cbid.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#include "fobmodel/model.h"

namespace {

// The runtime's errors that enqueue() returns, as the driver's (cuda.h, CUresult).
CUresult driver_error(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return CUDA_SUCCESS;
    case cudaErrorInvalidResourceHandle:
      return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorStreamCaptureUnsupported:
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case cudaErrorStreamCaptureInvalidated:
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case cudaErrorStreamCaptureImplicit:
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// A driver call does not set the runtime's last error (cudaGetLastError reports runtime calls):
// enqueue() records one on failure, which is taken back here.
CUresult enqueue_op(CUstream stream, fobmodel::Op op) {
  const cudaError_t before = cudaPeekAtLastError();
  const cudaError_t e = fobmodel::enqueue(stream, std::move(op));
  if (e != cudaSuccess) {
    cudaGetLastError();
    fobmodel::record_error(before);
  }
  return driver_error(e);
}

std::string hex(uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// The 32-bit word a memory operation touches must be 4-byte aligned and lie in a live device
// allocation or pinned host memory, which is all a GPU can address ("all memory pointers passed
// as parameters to these operations are device pointers"): anything else would fault, which
// compute-sanitizer's memcheck reports, so the model reports the rule "memcheck".
CUresult check_word(const char* call, CUdeviceptr addr) {
  const void* p = reinterpret_cast<const void*>(addr);
  const fobmodel::Memory where = fobmodel::memory_of(p);
  std::string why;
  if (addr % 4 != 0) {
    why = "is not 4-byte aligned";
  } else if (where == fobmodel::Memory::other) {
    why = "is neither device memory nor pinned host memory";
  } else if (fobmodel::live_allocation(p, 4) == nullptr) {
    why = "is in no live allocation";
  }
  if (why.empty()) return CUDA_SUCCESS;
  fobmodel::violation("memcheck", std::string(call) + " (task \"" + fobmodel::current_task() +
                                      "\"): the 32-bit word at " + hex(addr) + " " + why);
  return CUDA_ERROR_INVALID_VALUE;
}

// CUstreamWaitValue_flags: the condition, without CU_STREAM_WAIT_VALUE_FLUSH.
bool satisfied(uint32_t now, uint32_t value, unsigned kind) {
  switch (kind) {
    case CU_STREAM_WAIT_VALUE_GEQ:  // "(int32_t)(*addr - value) >= 0 ... a cyclic comparison"
      return static_cast<int32_t>(now - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:  // "*addr == value"
      return now == value;
    case CU_STREAM_WAIT_VALUE_AND:  // "(*addr & value) != 0"
      return (now & value) != 0;
    default:  // CU_STREAM_WAIT_VALUE_NOR: "~(*addr | value) != 0"
      return ~(now | value) != 0;
  }
}

std::string condition(uint32_t value, unsigned kind) {
  const std::string v = std::to_string(value);
  switch (kind) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return "(int32_t)(*addr - " + v + ") >= 0";
    case CU_STREAM_WAIT_VALUE_EQ:
      return "*addr == " + v;
    case CU_STREAM_WAIT_VALUE_AND:
      return "(*addr & " + v + ") != 0";
    default:
      return "~(*addr | " + v + ") != 0";
  }
}

// FOB_MODEL_DEADLOCK_S, as the NCCL model's deadlock rule reads it: a wait unsatisfied this long
// is a stream that would hang a GPU.
double deadlock_seconds() {
  const char* text = std::getenv("FOB_MODEL_DEADLOCK_S");
  const double seconds = text ? std::atof(text) : 0;
  return seconds > 0 ? seconds : 5;
}

// Who should have written the word: the host, or, for device memory shared through CUDA IPC,
// the processes that map it.
std::string writer_text(const uint32_t* word) {
  int owner = 0;
  if (!fobmodel::ipc_owner(word, &owner)) return "the host never wrote it";
  const int me = getpid();
  return owner == me ? "the word is device memory of this process (" + std::to_string(me) +
                           ") exported with cudaIpcGetMemHandle, and no process that imported it "
                           "(nor this one) wrote the value"
                     : "the word is device memory of process " + std::to_string(owner) +
                           ", imported with cudaIpcOpenMemHandle by this process (" +
                           std::to_string(me) + "), and no process wrote the value";
}

void report_stuck(const uint32_t* word, uint32_t value, unsigned kind, double seconds) {
  std::string stream = "?", task;
  fobmodel::running_op(&stream, &task);
  const uint32_t now = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", seconds);
  fobmodel::violation(
      "deadlock",
      "cuStreamWaitValue32 (stream " + stream + ", task \"" + task + "\") has waited " + waited +
          " s for the 32-bit word at " + hex(reinterpret_cast<uintptr_t>(word)) + " to satisfy " +
          condition(value, kind) + "; it holds " + std::to_string(now) + ": " + writer_text(word) +
          ", and the stream and all work queued behind the "
          "wait hang (cuStreamWaitValue32: \"Improper use of this API may deadlock "
          "the application\")");
}

// The stream's thread polls the word with acquire loads, backing off from a yield to 200 us, as
// a GPU's front end polls it; the first poll sees a value already written.
// Returns the value that satisfied it.
uint32_t wait_for(const uint32_t* word, uint32_t value, unsigned kind, double limit_s) {
  const auto start = std::chrono::steady_clock::now();
  bool reported = false;
  int backoff_us = 0;
  uint32_t seen = 0;
  while (!satisfied(seen = __atomic_load_n(word, __ATOMIC_ACQUIRE), value, kind)) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!reported && waited > limit_s) {
      reported = true;
      report_stuck(word, value, kind, waited);
    }
    if (backoff_us == 0) {
      std::this_thread::yield();
      backoff_us = 1;
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(backoff_us));
      backoff_us = std::min(backoff_us * 2, 200);
    }
  }
  return seen;
}

}  // namespace

extern "C" {

// cuStreamWaitValue32: flags are one of CUstreamWaitValue_flags' conditions, optionally with
// CU_STREAM_WAIT_VALUE_FLUSH; anything else is CUDA_ERROR_INVALID_VALUE. Captured, the wait
// becomes a graph node like any op: graphs have a node for it (cuGraphAddBatchMemOpNode, whose
// documentation lists cuStreamWaitValue32), and stream memory operations are not among the calls
// capture prohibits (cudaStreamBeginCapture).
CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                unsigned int flags) {
  fobmodel::ApiCall api(fobmodel::Domain::driver, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2,
                        "cuStreamWaitValue32_v2");
  const unsigned kind = flags & ~unsigned{CU_STREAM_WAIT_VALUE_FLUSH};
  if (kind > CU_STREAM_WAIT_VALUE_NOR) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = check_word("cuStreamWaitValue32", addr); r != CUDA_SUCCESS) return r;
  const auto* word = reinterpret_cast<const uint32_t*>(addr);
  const double limit_s = deadlock_seconds();
  fobmodel::Op op;
  op.name = "cuStreamWaitValue32";
  op.note = "value=" + std::to_string(value) + " flags=" + std::to_string(flags);
  // No footprint: the word is read as a synchronisation, not as data, and the race detector
  // must not see an edge (or a race) in it.
  // Across processes (device memory shared through CUDA IPC) the wait is the order the
  // cross-process race detector knows: it acquires what the write it saw published.
  op.run = [word, value, kind, limit_s] {
    const uint32_t seen = wait_for(word, value, kind, limit_s);
    fobmodel::flag_observed(word, value, seen, kind == CU_STREAM_WAIT_VALUE_GEQ);
  };
  return enqueue_op(stream, std::move(op));
}

// cuStreamWriteValue32: CU_STREAM_WRITE_VALUE_DEFAULT; CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER
// "is not supported in the v2 API" (CUDA_ERROR_NOT_SUPPORTED); other bits are not flags. The
// write is a 4-byte store on the stream, a release as the default's "memory fence before the
// write" makes it.
CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                 unsigned int flags) {
  fobmodel::ApiCall api(fobmodel::Domain::driver, CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2,
                        "cuStreamWriteValue32_v2");
  if (flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) return CUDA_ERROR_NOT_SUPPORTED;
  if (flags != CU_STREAM_WRITE_VALUE_DEFAULT) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = check_word("cuStreamWriteValue32", addr); r != CUDA_SUCCESS) return r;
  auto* word = reinterpret_cast<uint32_t*>(addr);
  fobmodel::Op op;
  op.name = "cuStreamWriteValue32";
  op.note = "value=" + std::to_string(value);
  op.footprint = {fobmodel::Footprint{word, 4, 1, 4, true}};
  op.flag = true;
  // Published before the store, so that a wait that sees the value finds what it orders.
  op.run = [word, value] {
    fobmodel::flag_written(word, value);
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
  };
  return enqueue_op(stream, std::move(op));
}

// cuMemHostGetDevicePointer: "Flags provides for future releases. For now, it must be set to 0";
// p must be in "mapped, pinned host" memory; "If all devices visible to the application have a
// non-zero value for the device attribute [CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_
// REGISTERED_MEM], the device pointer returned ... will match the original pointer p": every
// model device has it.
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  fobmodel::ApiCall api(fobmodel::Domain::driver,
                        CUPTI_DRIVER_TRACE_CBID_cuMemHostGetDevicePointer_v2,
                        "cuMemHostGetDevicePointer_v2");
  if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (fobmodel::memory_of(p) != fobmodel::Memory::pinned_host ||
      fobmodel::live_allocation(p, 1) == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

}  // extern "C"
