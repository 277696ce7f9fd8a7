#include "gpu_monitor.h"

#include <dlfcn.h>
#include <nvml.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fob {
namespace {

constexpr auto kPeriod = std::chrono::milliseconds(5);

// The NVML entry points used, looked up once in libnvidia-ml.so.1.
struct Nvml {
  decltype(&nvmlInit_v2) init = nullptr;
  decltype(&nvmlErrorString) error = nullptr;
  decltype(&nvmlDeviceGetHandleByPciBusId_v2) by_bus = nullptr;
  decltype(&nvmlDeviceGetClockInfo) clock = nullptr;
  decltype(&nvmlDeviceGetMaxClockInfo) max_clock = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) power = nullptr;
  decltype(&nvmlDeviceGetEnforcedPowerLimit) power_limit = nullptr;
  decltype(&nvmlDeviceGetTemperatureV) temperature = nullptr;
  // Drivers before nvmlDeviceGetTemperatureV (NVML 12.x) have only the older call.
  nvmlReturn_t (*temperature_v0)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*) = nullptr;
  decltype(&nvmlDeviceGetCurrentClocksEventReasons) reasons = nullptr;
  decltype(&nvmlDeviceGetP2PStatus) p2p = nullptr;
  decltype(&nvmlDeviceGetCpuAffinityWithinScope) cpu_affinity = nullptr;
  std::string why;  // why NVML cannot be used, "" when it can
};

template <typename F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

Nvml load() {
  Nvml n;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    n.why =
        "no NVML: libnvidia-ml.so.1, which comes with the NVIDIA driver, is not on the library "
        "path";
    return n;
  }
  bind(lib, "nvmlInit_v2", n.init);
  bind(lib, "nvmlErrorString", n.error);
  bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", n.by_bus);
  bind(lib, "nvmlDeviceGetClockInfo", n.clock);
  bind(lib, "nvmlDeviceGetMaxClockInfo", n.max_clock);
  bind(lib, "nvmlDeviceGetPowerUsage", n.power);
  bind(lib, "nvmlDeviceGetEnforcedPowerLimit", n.power_limit);
  bind(lib, "nvmlDeviceGetTemperatureV", n.temperature);
  bind(lib, "nvmlDeviceGetTemperature", n.temperature_v0);
  bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", n.reasons);
  if (!n.reasons) bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", n.reasons);
  bind(lib, "nvmlDeviceGetP2PStatus", n.p2p);
  bind(lib, "nvmlDeviceGetCpuAffinityWithinScope", n.cpu_affinity);
  if (!n.init || !n.error || !n.by_bus || !n.clock) {
    n.why =
        "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or "
        "nvmlDeviceGetClockInfo";
    return n;
  }
  if (const nvmlReturn_t r = n.init(); r != NVML_SUCCESS) {
    n.why = std::string("nvmlInit_v2: ") + n.error(r);
  }
  return n;
}

const Nvml& nvml() {
  static const Nvml loaded = load();  // initialised once per process, never shut down
  return loaded;
}

nvmlDevice_t device_at(const std::string& bus_id, std::string* why) {
  const Nvml& n = nvml();
  nvmlDevice_t device = nullptr;
  if (const nvmlReturn_t r = n.by_bus(bus_id.c_str(), &device); r != NVML_SUCCESS) {
    if (why) *why = "nvmlDeviceGetHandleByPciBusId_v2(" + bus_id + "): " + n.error(r);
    return nullptr;
  }
  return device;
}

}  // namespace

void GpuWindow::merge(const GpuWindow& o) {
  if (o.samples == 0) return;
  sm_min_mhz = samples == 0 ? o.sm_min_mhz : std::min(sm_min_mhz, o.sm_min_mhz);
  sm_max_mhz = std::max(sm_max_mhz, o.sm_max_mhz);
  power_max_w = std::max(power_max_w, o.power_max_w);
  temperature_max_c = std::max(temperature_max_c, o.temperature_max_c);
  reasons |= o.reasons;
  samples += o.samples;
}

GpuMonitor::GpuMonitor(const std::string& bus_id) {
  const Nvml& n = nvml();
  why_ = n.why;
  if (!why_.empty()) return;
  device_ = device_at(bus_id, &why_);
  if (!device_) return;
  auto dev = static_cast<nvmlDevice_t>(device_);
  if (n.max_clock) n.max_clock(dev, NVML_CLOCK_SM, &max_sm_mhz_);
  unsigned limit_mw = 0;
  if (n.power_limit && n.power_limit(dev, &limit_mw) == NVML_SUCCESS)
    power_limit_w_ = limit_mw / 1e3;
  thread_ = std::thread([this] { loop(); });
}

GpuMonitor::~GpuMonitor() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GpuMonitor::sample(GpuWindow& w) const {
  const Nvml& n = nvml();
  auto dev = static_cast<nvmlDevice_t>(device_);
  GpuWindow s;
  s.samples = 1;
  unsigned mhz = 0;
  if (n.clock(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) s.sm_min_mhz = s.sm_max_mhz = mhz;
  unsigned mw = 0;
  if (n.power && n.power(dev, &mw) == NVML_SUCCESS) s.power_max_w = mw / 1e3;
  if (n.temperature) {
    nvmlTemperature_t t{};
    t.version = nvmlTemperature_v1;
    t.sensorType = NVML_TEMPERATURE_GPU;
    if (n.temperature(dev, &t) == NVML_SUCCESS) s.temperature_max_c = t.temperature;
  } else if (n.temperature_v0) {
    unsigned c = 0;
    if (n.temperature_v0(dev, NVML_TEMPERATURE_GPU, &c) == NVML_SUCCESS) {
      s.temperature_max_c = static_cast<int>(c);
    }
  }
  unsigned long long reasons = 0;
  if (n.reasons && n.reasons(dev, &reasons) == NVML_SUCCESS) s.reasons = reasons;
  w.merge(s);
}

void GpuMonitor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    if (running_) sample(window_);
    cv_.wait_for(lock, kPeriod);
  }
}

void GpuMonitor::start() {
  if (device_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  window_ = GpuWindow{};
  running_ = true;
}

GpuWindow GpuMonitor::stop() {
  if (device_ == nullptr) return {};
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
  if (window_.samples == 0) sample(window_);  // a window shorter than the period
  return window_;
}

std::string GpuMonitor::bind_to_gpu_cpus() {
  if (const char* choice = std::getenv("FOB_CPU_BIND");
      choice && std::strcmp(choice, "none") == 0) {
    return "left as the launcher set it (FOB_CPU_BIND=none)";
  }
  const Nvml& n = nvml();
  if (!why_.empty()) return "left as the launcher set it: " + why_;
  if (!n.cpu_affinity) return "left as the launcher set it: NVML has no CPU affinity query";
  constexpr unsigned kWords = CPU_SETSIZE / (8 * sizeof(unsigned long));
  unsigned long words[kWords] = {};
  if (n.cpu_affinity(static_cast<nvmlDevice_t>(device_), kWords, words, NVML_AFFINITY_SCOPE_NODE) !=
      NVML_SUCCESS) {
    return "left as the launcher set it: NVML does not know the GPU's CPUs";
  }
  cpu_set_t allowed, near, both;
  CPU_ZERO(&near);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return "left alone: sched_getaffinity failed";
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (words[cpu / (8 * sizeof(unsigned long))] >> (cpu % (8 * sizeof(unsigned long))) & 1UL) {
      CPU_SET(cpu, &near);
    }
  }
  CPU_AND(&both, &allowed, &near);
  const int count = CPU_COUNT(&both);
  if (count == 0) {
    return "left as the launcher set it, off the GPU's NUMA node: none of its " +
           std::to_string(CPU_COUNT(&allowed)) + " CPUs is one of the GPU's " +
           std::to_string(CPU_COUNT(&near));
  }
  if (CPU_EQUAL(&both, &allowed)) {
    return "the launcher's " + std::to_string(count) + " CPUs, all on the GPU's NUMA node";
  }
  if (sched_setaffinity(0, sizeof both, &both) != 0) return "left alone: sched_setaffinity failed";
  return std::to_string(count) + " CPUs of the GPU's NUMA node (of " +
         std::to_string(CPU_COUNT(&allowed)) + " the launcher allowed)";
}

std::string GpuMonitor::throttle_text(uint64_t reasons) {
  static const std::pair<uint64_t, const char*> kThrottles[] = {
      {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
      {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
      {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
      {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
      {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake"}};
  std::string out;
  for (const auto& [bit, name] : kThrottles) {
    if (!(reasons & bit)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

std::vector<std::string> GpuMonitor::window_facts(const GpuWindow& w) const {
  if (!why_.empty() || w.samples == 0) return {};
  const std::string throttled = throttle_text(w.reasons);
  char power[64];
  std::snprintf(power, sizeof power, "%.0f", w.power_max_w);
  return {"gpu_samples=" + std::to_string(w.samples),
          "gpu_sm_clock_mhz=" + std::to_string(w.sm_min_mhz) + "-" + std::to_string(w.sm_max_mhz),
          "gpu_power_max_w=" + std::string(power),
          "gpu_temperature_max_c=" + std::to_string(w.temperature_max_c),
          "gpu_clock_event_reasons=" + std::to_string(w.reasons),
          "gpu_throttled=" + (throttled.empty() ? std::string("no") : throttled)};
}

std::vector<std::string> GpuMonitor::run_facts(const std::vector<std::string>& peers) const {
  if (!why_.empty()) return {"nvml=" + why_};
  char limit[64];
  std::snprintf(limit, sizeof limit, "%.0f", power_limit_w_);
  std::vector<std::string> out = {"nvml=libnvidia-ml.so.1",
                                  "gpu_sm_clock_max_mhz=" + std::to_string(max_sm_mhz_),
                                  "gpu_power_limit_w=" + std::string(limit)};
  std::string links;
  const Nvml& n = nvml();
  for (const std::string& peer : peers) {
    std::string status = "unknown";
    std::string why;
    if (nvmlDevice_t other = device_at(peer, &why); other && n.p2p) {
      nvmlGpuP2PStatus_t s = NVML_P2P_STATUS_UNKNOWN;
      if (n.p2p(static_cast<nvmlDevice_t>(device_), other, NVML_P2P_CAPS_INDEX_NVLINK, &s) ==
          NVML_SUCCESS) {
        status = s == NVML_P2P_STATUS_OK ? "yes" : "no";
      }
    }
    if (!links.empty()) links += "; ";
    links += peer + ": " + status;
  }
  if (!peers.empty()) out.push_back("gpu_nvlink_to=" + links);
  return out;
}

}  // namespace fob
