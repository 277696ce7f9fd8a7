// Devices, versions and errors (CUDA Runtime API, "Device Management", "Error Handling",
// "Version Management"). The model shows FOB_MODEL_DEVICES devices (default 4), filtered and
// renumbered by CUDA_VISIBLE_DEVICES as the CUDA environment variables document.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include "internal.h"

namespace fobmodel::detail {
namespace {

constexpr int kDefaultDevices = 4;
// Every current GPU reports memPitch 2^31 - 1: the largest pitch a 2-D copy accepts.
constexpr size_t kMemPitch = (size_t{1} << 31) - 1;

int physical_devices() {
  const char* text = std::getenv("FOB_MODEL_DEVICES");
  const long count = text ? std::strtol(text, nullptr, 10) : kDefaultDevices;
  return count >= 0 && count <= 64 ? static_cast<int>(count) : kDefaultDevices;
}

// CUDA_VISIBLE_DEVICES: a comma-separated list of device indices; "If one of the indices is
// invalid, only the devices whose index precedes the invalid index are visible" (CUDA C++
// Programming Guide, CUDA Environment Variables). Visible ordinal i is physical device list[i].
std::vector<int> visible_devices() {
  const int physical = physical_devices();
  std::vector<int> visible;
  const char* text = std::getenv("CUDA_VISIBLE_DEVICES");
  if (text == nullptr) {
    for (int d = 0; d < physical; ++d) visible.push_back(d);
    return visible;
  }
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    const long index = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || index < 0 || index >= physical) break;
    visible.push_back(static_cast<int>(index));
  }
  return visible;
}

const std::vector<int>& visible() {
  static const std::vector<int> devices = visible_devices();
  return devices;
}

thread_local int thread_device = 0;

// Physical GPU p sits on PCI bus 0x18 + 0x10 p: distinct, and stable whatever CUDA shows.
int physical_bus(int physical) {
  return 0x18 + 0x10 * physical;
}

int bus_of(int device) {
  return physical_bus(visible()[static_cast<size_t>(device)]);
}

Topology read_topology() {
  const char* text = std::getenv("FOB_MODEL_TOPOLOGY");
  const std::string name = text ? text : "nvlink";
  if (name == "nvlink" || name.empty()) return Topology::nvlink;
  if (name == "pcie") return Topology::pcie;
  if (name == "isolated") return Topology::isolated;
  violation("setup", "FOB_MODEL_TOPOLOGY=" + name + " is none of nvlink, pcie, isolated");
  return Topology::nvlink;
}

}  // namespace

int device_count() {
  return static_cast<int>(visible().size());
}

// Each host thread has its own current device, 0 until cudaSetDevice (cudaSetDevice).
int current_device() {
  return thread_device;
}

// The runtime's messages for the errors the model raises (cudaGetErrorString's wording).
constexpr std::pair<cudaError_t, const char*> kErrorNames[] = {
    {cudaSuccess, "no error"},
    {cudaErrorInvalidValue, "invalid argument"},
    {cudaErrorMemoryAllocation, "out of memory"},
    {cudaErrorInvalidPitchValue, "invalid pitch argument"},
    {cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevice, "invalid device ordinal"},
    {cudaErrorNoDevice, "no CUDA-capable device is detected"},
    {cudaErrorInvalidResourceHandle, "invalid resource handle"},
    {cudaErrorNotReady, "device not ready"},
    {cudaErrorInvalidConfiguration, "invalid configuration argument"},
    {cudaErrorNotSupported, "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge,
     "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "capture was not initiated in this stream"},
    {cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit,
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorStreamCaptureWrongThread,
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorIllegalState, "the operation is not permitted in the current state"},
    {cudaErrorDeviceUninitialized, "invalid device context"},
    {cudaErrorMapBufferObjectFailed, "mapping of buffer object failed"},
    {cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"},
};

const char* error_name(cudaError_t error) {
  for (const auto& [code, name] : kErrorNames) {
    if (code == error) return name;
  }
  return "unrecognized error code";
}

}  // namespace fobmodel::detail

namespace fobmodel {

int physical_device_count() {
  return detail::physical_devices();
}

std::string physical_bus_id(int physical) {
  char text[16];
  std::snprintf(text, sizeof text, "0000:%02X:00.0", detail::physical_bus(physical));
  return text;
}

int physical_device_of(int ordinal) {
  const std::vector<int>& devices = detail::visible();
  return ordinal >= 0 && static_cast<size_t>(ordinal) < devices.size()
             ? devices[static_cast<size_t>(ordinal)]
             : -1;
}

Topology topology() {
  static const Topology read = detail::read_topology();
  return read;
}

}  // namespace fobmodel

using namespace fobmodel::detail;
using fobmodel::record_error;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  FOB_RUNTIME_CALL(cudaGetDeviceCount, v3020);
  if (count == nullptr) return record_error(cudaErrorInvalidValue);
  *count = device_count();
  return *count == 0 ? record_error(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  FOB_RUNTIME_CALL(cudaSetDevice, v3020);
  if (device < 0 || device >= device_count()) return record_error(cudaErrorInvalidDevice);
  thread_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  FOB_RUNTIME_CALL(cudaGetDevice, v3020);
  if (device == nullptr) return record_error(cudaErrorInvalidValue);
  *device = thread_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  FOB_RUNTIME_CALL(cudaGetDeviceProperties, v12000);
  if (prop == nullptr) return record_error(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return record_error(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", fobmodel::kDeviceName);
  prop->uuid.bytes[0] = 'f';
  prop->uuid.bytes[1] = 'o';
  prop->uuid.bytes[2] = 'b';
  prop->uuid.bytes[15] = static_cast<char>(visible()[static_cast<size_t>(device)]);
  size_t free_bytes = 0;
  const int previous = thread_device;
  thread_device = device;
  cudaMemGetInfo(&free_bytes, &prop->totalGlobalMem);
  thread_device = previous;
  prop->sharedMemPerBlock = 48 << 10;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = kMemPitch;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 64 << 10;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->pciBusID = bus_of(device);
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->asyncEngineCount = copy_engines();
  prop->unifiedAddressing = 1;
  prop->concurrentKernels = 1;
  prop->streamPrioritiesSupported = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  FOB_RUNTIME_CALL(cudaDeviceGetPCIBusId, v4010);
  if (device < 0 || device >= device_count()) return record_error(cudaErrorInvalidDevice);
  // "[domain]:[bus]:[device].[function] where domain, bus, device, and function are all
  // hexadecimal values"; "pciBusId should be large enough to store 13 characters".
  if (pciBusId == nullptr || len < 13) return record_error(cudaErrorInvalidValue);
  std::snprintf(pciBusId, static_cast<size_t>(len), "0000:%02X:00.0", bus_of(device));
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  FOB_RUNTIME_CALL(cudaRuntimeGetVersion, v3020);
  if (runtimeVersion == nullptr) return record_error(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

const char* cudaGetErrorString(cudaError_t error) {
  FOB_RUNTIME_CALL(cudaGetErrorString, v3020);
  return error_name(error);
}

cudaError_t cudaGetLastError(void) {
  FOB_RUNTIME_CALL(cudaGetLastError, v3020);
  return fobmodel::detail::take_last_error(true);
}

cudaError_t cudaPeekAtLastError(void) {
  FOB_RUNTIME_CALL(cudaPeekAtLastError, v3020);
  return fobmodel::detail::take_last_error(false);
}

}  // extern "C"
