// Device attributes and peer access (CUDA Runtime API, Device Management and Peer Device Memory
// Access): what the copy-engine transport asks before it maps a peer's memory with CUDA IPC, and
// cudaMemcpyPeerAsync.
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "internal.h"

namespace fobmodel::detail {
namespace {

// H100 SXM reports 2 or 3 asynchronous engines depending on the driver; the model says 3.
constexpr int kCopyEngines = 3;

int read_copy_engines() {
  const char* text = std::getenv("FOB_MODEL_COPY_ENGINES");
  if (text == nullptr || *text == '\0') return kCopyEngines;
  char* end = nullptr;
  const long engines = std::strtol(text, &end, 10);
  if (*end != '\0' || engines < 1 || engines > 64) {
    violation("setup", std::string("FOB_MODEL_COPY_ENGINES=") + text +
                           " is not a number of copy engines from 1 to 64");
    return kCopyEngines;
  }
  return static_cast<int>(engines);
}

// The attributes the model answers. Another is cudaErrorInvalidValue: the model does not guess.
bool attribute(cudaDeviceAttr attr, int* value) {
  switch (attr) {
    case cudaDevAttrAsyncEngineCount:
      *value = copy_engines();
      return true;
    // IPC "is restricted to devices with support for unified addressing on Linux"
    // (cudaIpcGetMemHandle); every model device has both.
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrIpcEventSupport:
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
      *value = 1;
      return true;
    // No remote (RDMA) writes to flush: CU_STREAM_WAIT_VALUE_FLUSH is not needed.
    case cudaDevAttrCanFlushRemoteWrites:
      *value = 0;
      return true;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      return true;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return true;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return true;
    default:
      return false;
  }
}

bool valid_device(int device) {
  return device >= 0 && device < device_count();
}

std::mutex peer_mutex;
std::set<std::pair<int, int>> peer_enabled;  // (device, peer) with access enabled

// cudaMemcpyPeerAsync: each pointer must be memory of the device named with it.
bool on(const void* pointer, int device) {
  int actual = -1;
  return memory_of(pointer, &actual) == Memory::device && actual == device;
}

}  // namespace

int copy_engines() {
  static const int engines = read_copy_engines();
  return engines;
}

}  // namespace fobmodel::detail

using namespace fobmodel::detail;
using fobmodel::record_error;

extern "C" {

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  FOB_RUNTIME_CALL(cudaDeviceGetAttribute, v5000);
  if (value == nullptr) return record_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return record_error(cudaErrorInvalidDevice);
  return record_error(attribute(attr, value) ? cudaSuccess : cudaErrorInvalidValue);
}

// Every pair of distinct model GPUs can access each other: NVLink or the PCIe host bridge, and
// on the isolated topology through IPC ("cudaIpcOpenMemHandle can open handles to devices that
// may not be visible in the process"). A device and itself: 0, as the runtime answers.
cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  FOB_RUNTIME_CALL(cudaDeviceCanAccessPeer, v4000);
  if (canAccessPeer == nullptr) return record_error(cudaErrorInvalidValue);
  if (!valid_device(device) || !valid_device(peerDevice)) {
    return record_error(cudaErrorInvalidDevice);
  }
  *canAccessPeer = device != peerDevice ? 1 : 0;
  return cudaSuccess;
}

// "Returns cudaErrorInvalidDevice if cudaDeviceCanAccessPeer() indicates that the current device
// cannot directly access memory from peerDevice. Returns cudaErrorPeerAccessAlreadyEnabled if
// direct access of peerDevice from the current device has already been enabled. Returns
// cudaErrorInvalidValue if flags is not 0."
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  FOB_RUNTIME_CALL(cudaDeviceEnablePeerAccess, v4000);
  if (flags != 0) return record_error(cudaErrorInvalidValue);
  const int device = current_device();
  if (!valid_device(peerDevice) || peerDevice == device) {
    return record_error(cudaErrorInvalidDevice);
  }
  std::lock_guard lock(peer_mutex);
  if (!peer_enabled.emplace(device, peerDevice).second) {
    return record_error(cudaErrorPeerAccessAlreadyEnabled);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  FOB_RUNTIME_CALL(cudaDeviceDisablePeerAccess, v4000);
  std::lock_guard lock(peer_mutex);
  if (peer_enabled.erase({current_device(), peerDevice}) == 0) {
    return record_error(cudaErrorPeerAccessNotEnabled);
  }
  return cudaSuccess;
}

// "Copies memory from one device to memory on another device. dst is the base device pointer of
// the destination memory and dstDevice is the destination device": a pointer that is not memory
// of the device named with it is the rule "memcpy-kind". The copy is cudaMemcpyAsync's.
cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  FOB_RUNTIME_CALL(cudaMemcpyPeerAsync, v4000);
  if (count == 0) return cudaSuccess;
  if (!valid_device(dstDevice) || !valid_device(srcDevice)) {
    return record_error(cudaErrorInvalidDevice);
  }
  if (!on(dst, dstDevice) || !on(src, srcDevice)) {
    fobmodel::violation("memcpy-kind", "cudaMemcpyPeerAsync (task \"" + fobmodel::current_task() +
                                           "\"): dst " + pointer_text(dst) +
                                           " is not memory of device " + std::to_string(dstDevice) +
                                           " or src " + pointer_text(src) +
                                           " is not memory of device " + std::to_string(srcDevice));
    return record_error(cudaErrorInvalidValue);
  }
  return cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, stream);
}

}  // extern "C"
