#include "fob/device_plan.h"

#include <cmath>
#include <cstdlib>
#include <map>

namespace fob {

int select_device(int local_rank, int device_count, const char* override_text) {
  if (device_count <= 0) throw InputError("backend: 'cuda' but no CUDA device is visible");
  if (override_text && *override_text) {
    char* end = nullptr;
    long device = std::strtol(override_text, &end, 10);
    if (*end != '\0' || device < 0 || device >= device_count) {
      throw InputError(std::string("FOB_DEVICE: '") + override_text +
                       "' is not a visible device; valid: 0.." + std::to_string(device_count - 1));
    }
    return static_cast<int>(device);
  }
  return local_rank % device_count;
}

std::pair<int, int> ranks_sharing_a_device(const std::vector<std::string>& host_bus_ids) {
  std::map<std::string, int> first;
  for (int r = 0; r < static_cast<int>(host_bus_ids.size()); ++r) {
    auto [it, inserted] = first.emplace(host_bus_ids[r], r);
    if (!inserted) return {it->second, r};
  }
  return {-1, -1};
}

int64_t device_bytes_needed(const Plan& plan, int64_t workspace_bytes) {
  return plan.buffer_bytes() + workspace_bytes;
}

bool graph_capture_eligible(const Plan& plan, const std::string& transport, std::string* why) {
  if (transport != "nccl") {
    if (why) *why = "transport " + transport + " stages transfers through a host thread";
    return false;
  }
  if (plan.tasks.empty()) {
    if (why) *why = "the plan has no tasks";
    return false;
  }
  return true;
}

double verify_tolerance(DType dtype, int world) {
  switch (dtype) {
    case DType::bf16:
      return (world + 2) * std::ldexp(1.0, -8);
    case DType::fp16:
      return (world + 2) * std::ldexp(1.0, -11);
    default:
      return 0.0;
  }
}

double attention_tolerance(DType dtype, int world, int64_t seq, int64_t hidden) {
  const double u_acc = std::ldexp(1.0, dtype == DType::fp64 ? -53 : -24);
  const double u_store = dtype == DType::bf16   ? std::ldexp(1.0, -8)
                         : dtype == DType::fp16 ? std::ldexp(1.0, -11)
                                                : 0.0;
  return 16 * std::sqrt(static_cast<double>(seq + hidden)) * u_acc + (world + 6) * u_store;
}

bool verify_attention(const Plan& plan, CheckKind kind) {
  return plan.workload == Workload::attn &&
         (kind == CheckKind::attn_out || kind == CheckKind::rs_out ||
          kind == CheckKind::local_product);
}

double verify_tolerance(const Plan& plan, CheckKind kind) {
  return verify_attention(plan, kind)
             ? attention_tolerance(plan.dtype, plan.world, plan.shape.seq, plan.shape.hidden)
             : verify_tolerance(plan.dtype, plan.world);
}

}  // namespace fob
