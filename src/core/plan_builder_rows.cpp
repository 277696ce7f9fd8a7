// PlanBuilder's row-wise tasks of the mixture-of-experts layer: gather (its token permutations
// and weighted combine) and glu (its experts' gated activation).
#include <stdexcept>
#include <string>
#include <utility>

#include "fob/plan_builder.h"

namespace fob {

namespace {

// Why `map` cannot gather rows of a `src_rows`-row view into a `dst_rows`-row one, or "".
std::string row_map_fault(const RowMap& map, int64_t src_rows, int64_t dst_rows) {
  if (static_cast<int64_t>(map.src.size()) != dst_rows) {
    return "the map has " + std::to_string(map.src.size()) + " rows, the destination " +
           std::to_string(dst_rows);
  }
  if (!map.weight.empty() && map.weight.size() != map.src.size()) {
    return "the map has " + std::to_string(map.weight.size()) + " weights for " +
           std::to_string(map.src.size()) + " rows";
  }
  for (size_t i = 0; i < map.src.size(); ++i) {
    if (map.src[i] < -1 || map.src[i] >= src_rows) {
      return "row " + std::to_string(i) + "'s source " + std::to_string(map.src[i]) +
             " is outside [-1, " + std::to_string(src_rows) + ")";
    }
  }
  return "";
}

// A task of `kind` writing dst's rows (m, all n of its columns) from src.
Task row_task(const Plan& plan, TaskKind kind, const View& dst, const View& src,
              std::string label) {
  Task t;
  t.kind = kind;
  t.label = std::move(label);
  t.a = src;
  t.c = dst;
  t.m = dst.rows;
  t.n = view_cols(plan, dst);
  return t;
}

}  // namespace

int PlanBuilder::gather(View dst, View src, RowMap map, bool accumulate, std::string label) {
  require_full_rows(dst, label);
  require_full_rows(src, label);
  if (view_cols(src) != view_cols(dst)) {
    throw std::logic_error("gather " + label + ": source and destination widths differ");
  }
  // A row read after another thread wrote it would depend on the order the rows run in.
  if (src.buffer == dst.buffer && src.row < dst.row + dst.rows && dst.row < src.row + src.rows) {
    throw std::logic_error("gather " + label + ": source and destination rows overlap");
  }
  if (const std::string fault = row_map_fault(map, src.rows, dst.rows); !fault.empty()) {
    throw std::logic_error("gather " + label + ": " + fault);
  }
  Task t = row_task(plan_, TaskKind::gather, dst, src, std::move(label));
  t.accumulate = accumulate;
  // A multiply per element where weighted, an add where accumulating.
  const int per_element = (map.weight.empty() ? 0 : 1) + (accumulate ? 1 : 0);
  t.flops = per_element * static_cast<double>(t.m) * static_cast<double>(t.n);
  // Which source rows the map names is data: the whole source view is listed as read, which
  // may add an edge but never misses one.
  Access& access = fresh_access();
  access.reads.push_back({src.buffer, src.row, src.row + src.rows});
  if (accumulate) access.reads.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  access.writes.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  t.row_map = static_cast<int>(plan_.row_maps.size());
  const int id = add_task(std::move(t), access);
  plan_.row_maps.push_back(std::move(map));
  return id;
}

int PlanBuilder::glu(View dst, View src, std::string label) {
  require_full_rows(dst, label);
  require_full_rows(src, label);
  if (src.rows != dst.rows || view_cols(src) != 2 * view_cols(dst)) {
    throw std::logic_error("glu " + label + ": the source must be the destination's rows, twice " +
                           "its width (gate, then up projection)");
  }
  Task t = row_task(plan_, TaskKind::glu, dst, src, std::move(label));
  // The gate's max and the product.
  t.flops = 2.0 * static_cast<double>(t.m) * static_cast<double>(t.n);
  Access& access = fresh_access();
  access.reads.push_back({src.buffer, src.row, src.row + src.rows});
  access.writes.push_back({dst.buffer, dst.row, dst.row + dst.rows});
  return add_task(std::move(t), access);
}

}  // namespace fob
