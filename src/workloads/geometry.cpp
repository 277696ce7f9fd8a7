// A workload's extents and names, for every layer of fobench that asks for them.
#include <cstdio>
#include <string>
#include <utility>

#include "fob/layer.h"
#include "fob/workload.h"

namespace fob {

Geometry layer_geometry(const Shape& shape) {
  Geometry g;
  g.m = shape.tokens();
  g.d = shape.hidden;
  g.f = shape.ffn;
  return g;
}

Geometry transposed_geometry(const Shape& shape, int64_t m, const char* m_key) {
  Geometry g = layer_geometry(shape);
  g.m = m;
  g.f = shape.tokens();
  g.m_key = m_key;
  g.f_key = "batch*seq";
  return g;
}

Geometry geometry(Workload workload, const Shape& shape) {
  Geometry g = workload->geometry(shape);
  if (g.ag_f == 0) g.ag_f = g.f;
  g.seq = shape.seq;
  g.heads = shape.head_count();
  g.head_dim = g.heads > 0 ? shape.hidden / g.heads : 0;
  return g;
}

bool has_heads(const std::string& workload) {
  const Workload w = find_workload(workload);
  return w != nullptr && w->has_heads;
}

bool has_experts(const std::string& workload) {
  const Workload w = find_workload(workload);
  return w != nullptr && w->has_experts;
}

std::string expert_workloads() {
  std::string names;
  for (Workload w : all_workloads()) {
    if (w->has_experts) names += (names.empty() ? "" : ", ") + std::string(w->name);
  }
  return names;
}

std::string shape_options(const Shape& shape) {
  std::string text = "--batch " + std::to_string(shape.batch) + " --seq " +
                     std::to_string(shape.seq) + " --hidden " + std::to_string(shape.hidden) +
                     " --ffn " + std::to_string(shape.ffn);
  if (shape.heads > 0) text += " --heads " + std::to_string(shape.heads);
  const MoeShape& moe = shape.moe;
  for (const auto& [option, value] : {std::pair<const char*, int64_t>{" --experts ", moe.experts},
                                      {" --top-k ", moe.top_k},
                                      {" --expert-ffn ", moe.expert_ffn},
                                      {" --moe-seed ", moe.seed}}) {
    if (value > 0) text.append(option).append(std::to_string(value));
  }
  for (const auto& [option, value] : {std::pair<const char*, double>{" --moe-skew ", moe.skew},
                                      {" --capacity-factor ", moe.capacity_factor}}) {
    if (value != 0) {
      char number[32];
      std::snprintf(number, sizeof number, "%.17g", value);
      text.append(option).append(number);
    }
  }
  return text;
}

}  // namespace fob
