// What the GPU did while a case was timed: SM clock, power, temperature and the reasons NVML
// gives for clocks below their maximum (nvmlDeviceGetCurrentClocksEventReasons), sampled on a
// thread of its own every few milliseconds while timed iterations run, so that a throttled GPU
// shows in the case's row. And whether this GPU reaches another over NVLink
// (nvmlDeviceGetP2PStatus), which NVML answers for every GPU of the node whatever
// CUDA_VISIBLE_DEVICES hides. NVML (libnvidia-ml.so.1) comes with the driver and is loaded at
// run time, optional as CUPTI is: without it the file says why.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fob {

// One case's samples, merged over its rounds.
struct GpuWindow {
  int samples = 0;
  unsigned sm_min_mhz = 0, sm_max_mhz = 0;
  double power_max_w = 0;
  int temperature_max_c = 0;
  uint64_t reasons = 0;  // every clock event reason seen, OR-ed (nvmlClocksEventReason*)

  void merge(const GpuWindow& other);
};

class GpuMonitor {
 public:
  // The GPU at PCI bus id `bus_id` (cudaDeviceGetPCIBusId's form).
  explicit GpuMonitor(const std::string& bus_id);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // Why nothing is sampled ("" when NVML answers): no library, no such device, an NVML error.
  const std::string& unavailable() const { return why_; }
  // Starts sampling into a fresh window; stop() ends it and returns what it saw (at least one
  // sample where NVML answers).
  void start();
  GpuWindow stop();
  bool running() const { return running_; }

  // "key=value" lines for a case's window, and for the run: this GPU's limits, and its NVLink
  // to each of `peers` (bus ids of the GPUs of the node's other ranks).
  std::vector<std::string> window_facts(const GpuWindow& w) const;
  std::vector<std::string> run_facts(const std::vector<std::string>& peers) const;

  // Binds the calling thread, and the threads it starts later, to the CPUs of this GPU's NUMA
  // node (NVML's affinity at node scope) within the CPUs the launcher left it, as NCCL binds
  // its own threads: the host side of launches and transfers then runs beside the GPU and its
  // NIC. Returns what was done, for the results file. FOB_CPU_BIND=none leaves it alone.
  std::string bind_to_gpu_cpus();

  // The throttling reasons among `reasons`, in words ("sw_power_cap,hw_slowdown"), "" if none:
  // power caps, thermal and hardware slowdowns (not idle, application clocks or sync boost).
  static std::string throttle_text(uint64_t reasons);

 private:
  void sample(GpuWindow& w) const;
  void loop();

  std::string why_;
  void* device_ = nullptr;  // nvmlDevice_t
  unsigned max_sm_mhz_ = 0;
  double power_limit_w_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false, quit_ = false;
  GpuWindow window_;
};

}  // namespace fob
