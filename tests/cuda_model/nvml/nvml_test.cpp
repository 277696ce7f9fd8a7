// The NVML model through dlopen("libnvidia-ml.so.1")'s symbols, as the cuda backend's GPU
// monitor uses it, on the runtime model: initialisation counted, devices by bus id whatever CUDA
// sees, clocks, power, temperature, the clocks event reasons and NVLink status.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvml.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "fobmodel/model.h"

namespace {

struct Nvml {
  decltype(&nvmlInit_v2) init = nullptr;
  decltype(&nvmlShutdown) shutdown = nullptr;
  decltype(&nvmlErrorString) error = nullptr;
  decltype(&nvmlDeviceGetHandleByPciBusId_v2) by_bus = nullptr;
  decltype(&nvmlDeviceGetClockInfo) clock = nullptr;
  decltype(&nvmlDeviceGetMaxClockInfo) max_clock = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) power = nullptr;
  decltype(&nvmlDeviceGetEnforcedPowerLimit) power_limit = nullptr;
  decltype(&nvmlDeviceGetTemperatureV) temperature = nullptr;
  decltype(&nvmlDeviceGetCurrentClocksEventReasons) reasons = nullptr;
  // The deprecated calls by their types, not by decltype of their declarations, which nvml.h
  // marks deprecated from CUDA 13.1.
  nvmlReturn_t (*temperature_v0)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*) = nullptr;
  nvmlReturn_t (*throttle_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  decltype(&nvmlDeviceGetP2PStatus) p2p = nullptr;
  decltype(&nvmlDeviceGetCpuAffinityWithinScope) cpu_affinity = nullptr;
  const char* identity = nullptr;
};

template <typename F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml out;
    void* lib = dlopen(FOB_MODEL_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return out;
    bind(lib, "nvmlInit_v2", out.init);
    bind(lib, "nvmlShutdown", out.shutdown);
    bind(lib, "nvmlErrorString", out.error);
    bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", out.by_bus);
    bind(lib, "nvmlDeviceGetClockInfo", out.clock);
    bind(lib, "nvmlDeviceGetMaxClockInfo", out.max_clock);
    bind(lib, "nvmlDeviceGetPowerUsage", out.power);
    bind(lib, "nvmlDeviceGetEnforcedPowerLimit", out.power_limit);
    bind(lib, "nvmlDeviceGetTemperatureV", out.temperature);
    bind(lib, "nvmlDeviceGetTemperature", out.temperature_v0);
    bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", out.reasons);
    bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", out.throttle_reasons);
    bind(lib, "nvmlDeviceGetP2PStatus", out.p2p);
    bind(lib, "nvmlDeviceGetCpuAffinityWithinScope", out.cpu_affinity);
    out.identity = static_cast<const char*>(dlsym(lib, "fobmodel_identity"));
    return out;
  }();
  return n;
}

class NvmlModel : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ASSERT_NE(nvml().p2p, nullptr);
    ASSERT_NE(nvml().identity, nullptr);
    ASSERT_EQ(nvml().init(), NVML_SUCCESS);
  }
  void TearDown() override { nvml().shutdown(); }
  nvmlDevice_t device(const char* bus) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(nvml().by_bus(bus, &d), NVML_SUCCESS) << bus;
    return d;
  }
};

TEST_F(NvmlModel, InitialisationIsCountedAndCallsBeforeItFail) {
  nvmlDevice_t d = device("0000:18:00.0");
  unsigned mhz = 0;
  ASSERT_EQ(nvml().init(), NVML_SUCCESS);
  ASSERT_EQ(nvml().shutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml().clock(d, NVML_CLOCK_SM, &mhz), NVML_SUCCESS);  // one init still counted
  ASSERT_EQ(nvml().shutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml().clock(d, NVML_CLOCK_SM, &mhz), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml().by_bus("0000:18:00.0", &d), NVML_ERROR_UNINITIALIZED);
  // "no error is reported if nvmlShutdown() is called more times than nvmlInit()".
  EXPECT_EQ(nvml().shutdown(), NVML_SUCCESS);
  EXPECT_STREQ(nvml().error(NVML_ERROR_UNINITIALIZED),
               "NVML was not first initialized with nvmlInit()");
  ASSERT_EQ(nvml().init(), NVML_SUCCESS);
}

TEST_F(NvmlModel, DevicesByBusIdInEveryDocumentedFormat) {
  nvmlDevice_t d = nullptr;
  // cudaDeviceGetPCIBusId's form, NVML's own 8-digit domain, and bus:device.function.
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 1), cudaSuccess);
  const nvmlDevice_t one = device(bus);
  EXPECT_EQ(device("00000000:28:00.0"), one);
  EXPECT_EQ(device("28:00.0"), one);
  EXPECT_EQ(device("0000:28:00"), one);
  EXPECT_NE(device("0000:18:00.0"), one);
  EXPECT_EQ(nvml().by_bus("0000:58:00.0", &d), NVML_ERROR_NOT_FOUND);  // 4 devices: 18..48
  EXPECT_EQ(nvml().by_bus("not a bus", &d), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().by_bus(nullptr, &d), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().by_bus("0000:18:00.0", nullptr), NVML_ERROR_INVALID_ARGUMENT);
  unsigned mhz = 0;
  EXPECT_EQ(nvml().clock(reinterpret_cast<nvmlDevice_t>(&mhz), NVML_CLOCK_SM, &mhz),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().clock(one, NVML_CLOCK_SM, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(NvmlModel, NvmlSeesEveryDeviceWhateverCudaVisibleDevicesSays) {
  setenv("CUDA_VISIBLE_DEVICES", "3", 1);
  EXPECT_EXIT(
      {
        int count = 0;
        nvmlDevice_t d = nullptr;
        const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count == 1 &&
                        nvml().by_bus("0000:18:00.0", &d) == NVML_SUCCESS &&
                        nvml().by_bus("0000:48:00.0", &d) == NVML_SUCCESS;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_F(NvmlModel, ClocksPowerAndTemperatureFollowTheThrottleAndTheStreams) {
  const nvmlDevice_t d = device("0000:18:00.0");
  unsigned value = 0;
  ASSERT_EQ(nvml().max_clock(d, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 1980u);
  ASSERT_EQ(nvml().clock(d, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 1980u);
  EXPECT_EQ(nvml().clock(d, static_cast<nvmlClockType_t>(9), &value), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvml().power_limit(d, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 700000u);
  unsigned long long reasons = 1234;
  ASSERT_EQ(nvml().reasons(d, &reasons), NVML_SUCCESS);
  EXPECT_EQ(reasons, static_cast<unsigned long long>(nvmlClocksEventReasonGpuIdle));
  // An op running on device 0 makes it busy; device 1 stays idle.
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0), cudaSuccess);
  fobmodel::Op op;
  op.name = "busy";
  op.run = [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
  ASSERT_EQ(fobmodel::enqueue(stream, std::move(op)), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(nvml().reasons(d, &reasons), NVML_SUCCESS);
  EXPECT_EQ(reasons, static_cast<unsigned long long>(nvmlClocksEventReasonNone));
  ASSERT_EQ(nvml().throttle_reasons(device("0000:28:00.0"), &reasons), NVML_SUCCESS);
  EXPECT_EQ(reasons, static_cast<unsigned long long>(nvmlClocksEventReasonGpuIdle));
  ASSERT_EQ(nvml().power(d, &value), NVML_SUCCESS);
  EXPECT_GT(value, 100000u);
  cudaStreamSynchronize(stream);
  // Throttled: the named bits, the SM clock down, power at the limit, hot.
  setenv("FOB_MODEL_GPU_THROTTLE", "sw_power_cap,hw_thermal_slowdown", 1);
  ASSERT_EQ(nvml().reasons(d, &reasons), NVML_SUCCESS);
  EXPECT_EQ(reasons, static_cast<unsigned long long>(nvmlClocksEventReasonSwPowerCap |
                                                     nvmlClocksThrottleReasonHwThermalSlowdown));
  ASSERT_EQ(nvml().clock(d, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 1410u);
  ASSERT_EQ(nvml().max_clock(d, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 1980u);
  ASSERT_EQ(nvml().power(d, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 700000u);
  nvmlTemperature_t t{};
  t.version = nvmlTemperature_v1;
  t.sensorType = NVML_TEMPERATURE_GPU;
  ASSERT_EQ(nvml().temperature(d, &t), NVML_SUCCESS);
  EXPECT_GE(t.temperature, 80);
  EXPECT_EXIT(
      {
        setenv("FOB_MODEL_GPU_THROTTLE", "sw_power_cap,too_hot", 1);
        nvml().reasons(d, &reasons);
      },
      ::testing::ExitedWithCode(86), "setup: FOB_MODEL_GPU_THROTTLE names too_hot");
  unsetenv("FOB_MODEL_GPU_THROTTLE");
}

TEST_F(NvmlModel, TemperatureChecksItsStructureVersionAndSensor) {
  const nvmlDevice_t d = device("0000:18:00.0");
  nvmlTemperature_t t{};
  t.version = nvmlTemperature_v1 + 1;
  t.sensorType = NVML_TEMPERATURE_GPU;
  EXPECT_EQ(nvml().temperature(d, &t), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  t.version = nvmlTemperature_v1;
  t.sensorType = NVML_TEMPERATURE_COUNT;
  EXPECT_EQ(nvml().temperature(d, &t), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().temperature(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  t.sensorType = NVML_TEMPERATURE_GPU;
  ASSERT_EQ(nvml().temperature(d, &t), NVML_SUCCESS);
  unsigned old = 0;
  ASSERT_EQ(nvml().temperature_v0(d, NVML_TEMPERATURE_GPU, &old), NVML_SUCCESS);
  EXPECT_EQ(static_cast<int>(old), t.temperature);
  EXPECT_EQ(nvml().temperature_v0(d, NVML_TEMPERATURE_COUNT, &old), NVML_ERROR_INVALID_ARGUMENT);
}

// NVLink per FOB_MODEL_TOPOLOGY (read once per process: each topology in a process of its own).
int nvlink_status(const char* topology, nvmlGpuP2PCapsIndex_t index) {
  setenv("FOB_MODEL_TOPOLOGY", topology, 1);
  nvmlDevice_t a = nullptr, b = nullptr;
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
  if (nvml().by_bus("0000:18:00.0", &a) != NVML_SUCCESS ||
      nvml().by_bus("0000:28:00.0", &b) != NVML_SUCCESS ||
      nvml().p2p(a, b, index, &status) != NVML_SUCCESS) {
    return 99;
  }
  return static_cast<int>(status);
}

// The death tests' children run this body up to their own statement: nothing before them may
// read the topology.
TEST_F(NvmlModel, NvlinkStatusFollowsTheTopology) {
  EXPECT_EXIT(std::_Exit(nvlink_status("pcie", NVML_P2P_CAPS_INDEX_NVLINK)),
              ::testing::ExitedWithCode(NVML_P2P_STATUS_NOT_SUPPORTED), "");
  EXPECT_EXIT(std::_Exit(nvlink_status("pcie", NVML_P2P_CAPS_INDEX_READ)),
              ::testing::ExitedWithCode(NVML_P2P_STATUS_OK), "");
  EXPECT_EXIT(std::_Exit(nvlink_status("isolated", NVML_P2P_CAPS_INDEX_NVLINK)),
              ::testing::ExitedWithCode(NVML_P2P_STATUS_OK), "");
  EXPECT_EQ(nvlink_status("nvlink", NVML_P2P_CAPS_INDEX_NVLINK), NVML_P2P_STATUS_OK);
  unsetenv("FOB_MODEL_TOPOLOGY");
  const nvmlDevice_t d = device("0000:18:00.0");
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_OK;
  ASSERT_EQ(nvml().p2p(d, d, NVML_P2P_CAPS_INDEX_NVLINK, &status), NVML_SUCCESS);
  EXPECT_EQ(status, NVML_P2P_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(nvml().p2p(d, d, NVML_P2P_CAPS_INDEX_UNKNOWN, &status), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().p2p(d, d, NVML_P2P_CAPS_INDEX_NVLINK, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

// A device's CPUs at node scope: every online CPU, or FOB_MODEL_GPU_CPUS's, bit i % 64 of word
// i / 64; a set too small for them, an unknown scope and a null set are refused.
TEST_F(NvmlModel, CpuAffinityNamesTheNodesCpus) {
  ASSERT_NE(nvml().cpu_affinity, nullptr);
  const nvmlDevice_t d = device("0000:18:00.0");
  unsigned long set[2] = {0, 0};
  unsetenv("FOB_MODEL_GPU_CPUS");
  ASSERT_EQ(nvml().cpu_affinity(d, 2, set, NVML_AFFINITY_SCOPE_NODE), NVML_SUCCESS);
  EXPECT_EQ(__builtin_popcountl(set[0]) + __builtin_popcountl(set[1]),
            sysconf(_SC_NPROCESSORS_ONLN));
  setenv("FOB_MODEL_GPU_CPUS", "1,65", 1);
  ASSERT_EQ(nvml().cpu_affinity(d, 2, set, NVML_AFFINITY_SCOPE_NODE), NVML_SUCCESS);
  EXPECT_EQ(set[0], 2UL);
  EXPECT_EQ(set[1], 2UL);
  EXPECT_EQ(nvml().cpu_affinity(d, 1, set, NVML_AFFINITY_SCOPE_NODE), NVML_ERROR_INSUFFICIENT_SIZE);
  unsetenv("FOB_MODEL_GPU_CPUS");
  EXPECT_EQ(nvml().cpu_affinity(d, 2, set, 7), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().cpu_affinity(d, 2, nullptr, NVML_AFFINITY_SCOPE_NODE),
            NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
