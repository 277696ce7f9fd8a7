// libnvidia-ml.so.1 of the cuda model: the NVML calls the cuda backend's GPU monitor looks up,
// with the signatures of the real nvml.h, over the model's machine (fobmodel/model.h). NVML sees
// every one of the FOB_MODEL_DEVICES physical GPUs by its PCI bus id, whatever
// CUDA_VISIBLE_DEVICES hides from CUDA ("The NVML index may not correlate with other APIs, such
// as the CUDA device index", nvmlDeviceGetHandleByIndex_v2). Clocks, power and temperatures
// are the model's numbers for an H100 SXM; FOB_MODEL_GPU_THROTTLE names the clocks event
// reasons a test wants the GPUs to report.
#include <nvml.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "fobmodel/model.h"

struct nvmlDevice_st {
  int physical = 0;
};

namespace {

constexpr int kMaxDevices = 64;
constexpr unsigned kMaxSmMhz = 1980, kThrottledSmMhz = 1410, kMemMhz = 2619, kVideoMhz = 1755;
constexpr unsigned kPowerLimitMw = 700000, kIdleMw = 70000, kBusyMw = 450000;
constexpr int kIdleC = 35, kBusyC = 55, kHotC = 88;

std::mutex g_mu;
int g_refs = 0;  // nvmlInit_v2 calls not yet matched by nvmlShutdown
bool g_ever = false;
nvmlDevice_st g_devices[kMaxDevices];

bool initialized() {
  std::lock_guard lock(g_mu);
  return g_refs > 0;
}

// The device a handle names: NVML_ERROR_UNINITIALIZED before nvmlInit_v2 (or after the last
// nvmlShutdown), NVML_ERROR_INVALID_ARGUMENT for a handle that is not one ("if device is
// invalid"), and the null output pointers every call lists with it.
nvmlReturn_t check(nvmlDevice_t device, const void* out, int* physical) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  const int count = std::min(fobmodel::physical_device_count(), kMaxDevices);
  if (device < g_devices || device >= g_devices + count || out == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *physical = device->physical;
  return NVML_SUCCESS;
}

// FOB_MODEL_GPU_THROTTLE: a comma list of sw_power_cap, hw_slowdown, sw_thermal_slowdown,
// hw_thermal_slowdown, hw_power_brake; another name is the rule "setup".
unsigned long long throttle_bits() {
  static const std::pair<const char*, unsigned long long> kNames[] = {
      {"sw_power_cap", nvmlClocksEventReasonSwPowerCap},
      {"hw_slowdown", nvmlClocksThrottleReasonHwSlowdown},
      {"sw_thermal_slowdown", nvmlClocksEventReasonSwThermalSlowdown},
      {"hw_thermal_slowdown", nvmlClocksThrottleReasonHwThermalSlowdown},
      {"hw_power_brake", nvmlClocksThrottleReasonHwPowerBrakeSlowdown}};
  const char* text = std::getenv("FOB_MODEL_GPU_THROTTLE");
  if (text == nullptr) return 0;
  unsigned long long bits = 0;
  const std::string list = text;
  size_t start = 0;
  while (start < list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    bool known = false;
    for (const auto& [reason, bit] : kNames) {
      if (name == reason) bits |= bit, known = true;
    }
    if (!known)
      fobmodel::violation("setup", "FOB_MODEL_GPU_THROTTLE names " + name + ", no reason");
  }
  return bits;
}

constexpr unsigned long long kThermal =
    nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksThrottleReasonHwThermalSlowdown;
constexpr unsigned long long kPower =
    nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwPowerBrakeSlowdown;

// The reasons a device reports: the throttles named, else GpuIdle while none of its streams runs
// an op ("Nothing is running on the GPU and the clocks are dropping to Idle state").
unsigned long long reasons_of(int physical) {
  const unsigned long long throttles = throttle_bits();
  if (throttles != 0) return throttles;
  return fobmodel::device_running(physical) ? nvmlClocksEventReasonNone
                                            : nvmlClocksEventReasonGpuIdle;
}

int temperature_of(int physical) {
  if ((throttle_bits() & kThermal) != 0) return kHotC;
  return fobmodel::device_running(physical) ? kBusyC : kIdleC;
}

nvmlReturn_t clock_of(nvmlDevice_t device, nvmlClockType_t type, unsigned* mhz, bool max) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, mhz, &physical); r != NVML_SUCCESS) return r;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      *mhz = max || throttle_bits() == 0 ? kMaxSmMhz : kThrottledSmMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      *mhz = kMemMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO:
      *mhz = kVideoMhz;
      return NVML_SUCCESS;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

// A PCI bus id in one of the formats nvmlDeviceGetHandleByPciBusId_v2 accepts ("domain:bus:
// device.function in format %x:%x:%x.%x", "domain:bus:device in format %x:%x:%x", "bus:device.
// function in format %x:%x.%x"), as (domain, bus, device, function); false if it is none.
bool parse_bus_id(const char* text, unsigned parts[4]) {
  int used = 0;
  const std::string s = text;
  parts[0] = parts[3] = 0;
  if (std::sscanf(text, "%x:%x:%x.%x%n", &parts[0], &parts[1], &parts[2], &parts[3], &used) == 4 &&
      static_cast<size_t>(used) == s.size()) {
    return true;
  }
  used = 0;
  if (std::sscanf(text, "%x:%x:%x%n", &parts[0], &parts[1], &parts[2], &used) == 3 &&
      static_cast<size_t>(used) == s.size()) {
    return true;
  }
  parts[0] = 0;
  used = 0;
  return std::sscanf(text, "%x:%x.%x%n", &parts[1], &parts[2], &parts[3], &used) == 3 &&
         static_cast<size_t>(used) == s.size();
}

}  // namespace

extern "C" {

// "A reference count of the number of initializations is maintained. Shutdown only occurs when
// the reference count reaches zero" (nvmlInit_v2, nvmlShutdown).
nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard lock(g_mu);
  for (int d = 0; d < kMaxDevices; ++d) g_devices[d].physical = d;
  ++g_refs;
  g_ever = true;
  return NVML_SUCCESS;
}

// "For backwards compatibility, no error is reported if nvmlShutdown() is called more times than
// nvmlInit()"; NVML_ERROR_UNINITIALIZED "if the library has not been successfully initialized":
// never.
nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(g_mu);
  if (!g_ever) return NVML_ERROR_UNINITIALIZED;
  if (g_refs > 0) --g_refs;
  return NVML_SUCCESS;
}

// The texts of nvml.h's nvmlReturn_t comments.
const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "The operation was successful";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML was not first initialized with nvmlInit()";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "A supplied argument is invalid";
    case NVML_ERROR_NOT_SUPPORTED:
      return "The requested operation is not available on target device";
    case NVML_ERROR_NO_PERMISSION:
      return "The current user does not have permission for operation";
    case NVML_ERROR_NOT_FOUND:
      return "A query to find an object was unsuccessful";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "The provided version is invalid/unsupported";
    default:
      return "An internal driver error occurred";
  }
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  unsigned want[4] = {0, 0, 0, 0};
  if (pciBusId == nullptr || device == nullptr || !parse_bus_id(pciBusId, want)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const int count = std::min(fobmodel::physical_device_count(), kMaxDevices);
  for (int d = 0; d < count; ++d) {
    unsigned have[4] = {0, 0, 0, 0};
    if (!parse_bus_id(fobmodel::physical_bus_id(d).c_str(), have)) continue;
    if (have[0] == want[0] && have[1] == want[1] && have[2] == want[2] && have[3] == want[3]) {
      *device = &g_devices[d];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock) {
  return clock_of(device, type, clock, false);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int* clock) {
  return clock_of(device, type, clock, true);
}

// Milliwatts: at the enforced limit while power-capped, else the model's draw, busy or idle.
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, power, &physical); r != NVML_SUCCESS) return r;
  if ((throttle_bits() & kPower) != 0) {
    *power = kPowerLimitMw;
  } else {
    *power = fobmodel::device_running(physical) ? kBusyMw : kIdleMw;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, limit, &physical); r != NVML_SUCCESS) return r;
  *limit = kPowerLimitMw;
  return NVML_SUCCESS;
}

// The versioned call: a structure of another version is NVML_ERROR_ARGUMENT_VERSION_MISMATCH
// ("The provided version is invalid/unsupported"); "sensorType is invalid" INVALID_ARGUMENT.
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t* temperature) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, temperature, &physical); r != NVML_SUCCESS) return r;
  if (temperature->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  temperature->temperature = temperature_of(physical);
  return NVML_SUCCESS;
}

// Deprecated in NVML 13 ("Use nvmlDeviceGetTemperatureV instead"), still exported.
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, temp, &physical); r != NVML_SUCCESS) return r;
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = static_cast<unsigned>(temperature_of(physical));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* clocksEventReasons) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, clocksEventReasons, &physical); r != NVML_SUCCESS) {
    return r;
  }
  *clocksEventReasons = reasons_of(physical);
  return NVML_SUCCESS;
}

// Deprecated ("Use nvmlDeviceGetCurrentClocksEventReasons instead"): the same bits.
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* clocksThrottleReasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(device, clocksThrottleReasons);
}

// NVLink joins every pair on the nvlink topology and on the isolated one (the links exist; NCCL
// cannot see them when each rank sees only its own GPU, NVIDIA/nccl#1066), not on pcie, nor a
// GPU to itself. Reads, writes, atomics and PCIe peer access work on every topology.
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t* p2pStatus) {
  int one = 0, two = 0;
  if (const nvmlReturn_t r = check(device1, p2pStatus, &one); r != NVML_SUCCESS) return r;
  if (const nvmlReturn_t r = check(device2, p2pStatus, &two); r != NVML_SUCCESS) return r;
  if (p2pIndex < NVML_P2P_CAPS_INDEX_READ || p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const bool links = fobmodel::topology() != fobmodel::Topology::pcie && one != two;
  *p2pStatus = p2pIndex != NVML_P2P_CAPS_INDEX_NVLINK || links ? NVML_P2P_STATUS_OK
                                                               : NVML_P2P_STATUS_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

// The CPUs "within" the device's NUMA node (NVML_AFFINITY_SCOPE_NODE) or socket: the model's
// devices sit on one node with every online CPU, or, with FOB_MODEL_GPU_CPUS (a comma list of
// CPU numbers), on the CPUs it names, so that a test can see a process bound to them. As NVML
// documents: cpuSetSize words of unsigned long, CPU i at bit i % 64 of word i / 64; a set too
// small for the CPUs is NVML_ERROR_INSUFFICIENT_SIZE.
nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
                                                 unsigned long* cpuSet, nvmlAffinityScope_t scope) {
  int physical = 0;
  if (const nvmlReturn_t r = check(device, cpuSet, &physical); r != NVML_SUCCESS) return r;
  if (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  std::vector<long> cpus;
  if (const char* list = std::getenv("FOB_MODEL_GPU_CPUS"); list && *list) {
    for (const char* p = list; *p;) {
      char* end = nullptr;
      const long cpu = std::strtol(p, &end, 10);
      if (end == p || cpu < 0) return NVML_ERROR_INVALID_ARGUMENT;
      cpus.push_back(cpu);
      p = *end == ',' ? end + 1 : end;
    }
  } else {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < online; ++cpu) cpus.push_back(cpu);
  }
  constexpr long kBits = 8 * sizeof(unsigned long);
  for (unsigned i = 0; i < cpuSetSize; ++i) cpuSet[i] = 0;
  for (long cpu : cpus) {
    if (cpu / kBits >= static_cast<long>(cpuSetSize)) return NVML_ERROR_INSUFFICIENT_SIZE;
    cpuSet[cpu / kBits] |= 1UL << (cpu % kBits);
  }
  return NVML_SUCCESS;
}

}  // extern "C"
