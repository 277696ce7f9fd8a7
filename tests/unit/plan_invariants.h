// The plan invariants' fixture and helpers, shared by test_plans.cpp and
// test_plans_schedule.cpp: every workload and strategy at worlds 1..kMaxWorld.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../common/input_error.h"
#include "../common/plan_closure.h"
#include "../common/strategy_specs.h"
#include "../common/workload_cases.h"
#include "fob/plan.h"
#include "fob/strategy.h"
#include "fob/types.h"
#include "fob/workload.h"

namespace fob::plan_test {

// The specs are strategy_specs.h's: every strategy in the table, at kPlanParams where it takes a
// parameter (3 cuts 8 rows into uneven pieces: 3, 3, 2).
inline constexpr int kMaxWorld = 8;
// Per-rank rows are 8 in every role: tokens (ag_gemm, gemm_rs, mlp), ffn (ag_gemm_w) and hidden
// (gemm_rs_grad) all grow with the world size.
inline constexpr int64_t kRowsPerRank = 8;

// Tokens M = 8N so one rank's block (8 rows) takes every parameter in kPlanParams; ffn = 8N. The
// sequence (4N) is shorter than a block at N = 1 and cuts blocks apart at N = 3, so attention
// meets query slices spanning, filling and straddling sequences.
inline Shape shape_for(int world) {
  Shape s;
  s.batch = 2;
  s.seq = 4 * world;
  s.hidden = kRowsPerRank * world;
  s.ffn = 8 * world;
  s.heads = 2 * world;  // attn: two heads of 4 columns per rank
  return s;
}

inline CaseSpec case_for(Workload workload, const std::string& spec, int world) {
  CaseSpec c;
  c.workload = workload;
  c.shape = shape_for(world);
  c.dtype = DType::fp32;
  c.world = world;
  c.strategy = parse_strategy(spec);
  return c;
}

// Rows [begin, end) of one buffer.
struct Rows {
  int64_t begin;
  int64_t end;
};

// Each row of [0, total) is hit exactly once by `ranges`.
inline ::testing::AssertionResult covers_exactly_once(const std::vector<Rows>& ranges,
                                                      int64_t total) {
  std::vector<int> hits(static_cast<size_t>(total), 0);
  for (const Rows& r : ranges) {
    if (r.begin < 0 || r.end > total || r.begin > r.end) {
      return ::testing::AssertionFailure()
             << "range [" << r.begin << ", " << r.end << ") outside [0, " << total << ")";
    }
    for (int64_t i = r.begin; i < r.end; ++i) ++hits[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < total; ++i) {
    if (hits[static_cast<size_t>(i)] != 1) {
      return ::testing::AssertionFailure()
             << "row " << i << " hit " << hits[static_cast<size_t>(i)] << " times";
    }
  }
  return ::testing::AssertionSuccess();
}

inline bool is_p2p(const Task& t) {
  return t.kind == TaskKind::send || t.kind == TaskKind::recv || t.kind == TaskKind::exchange;
}
inline bool sends(const Task& t) {
  return (t.kind == TaskKind::send || t.kind == TaskKind::exchange) && t.send_peer >= 0;
}
inline bool receives(const Task& t) {
  return (t.kind == TaskKind::recv || t.kind == TaskKind::exchange) && t.recv_peer >= 0;
}

inline std::string describe(const Plan& plan, int task) {
  std::ostringstream out;
  out << "rank " << plan.rank << " task " << task << " '" << plan.tasks.at(task).label << "'";
  return out.str();
}

using Param = std::tuple<Workload, std::string>;

inline std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string spec = std::get<1>(info.param);
  std::replace(spec.begin(), spec.end(), ':', '_');
  return std::string(to_string(std::get<0>(info.param))) + "_" + spec;
}

inline bool named(const Strategy& s, const char* name) {
  return std::string(s.name) == name;
}

// A property that holds for some workloads and strategies alone has a fixture of its own
// (derived from PlanInvariants), instantiated at those combinations alone: one it means nothing
// for is no test at all, rather than a test reported skipped.
#define INSTANTIATE_PLAN_SUITE(fixture, applies)                                               \
  INSTANTIATE_TEST_SUITE_P(AllStrategies, fixture, ::testing::ValuesIn(params_where(applies)), \
                           param_name)

// What the invariants below expect of a workload's plan, from its table entry: which halves it
// has and how they connect. The two layouts whose plans add a step to the halves are named.
struct Layout {
  bool has_ag = false, has_rs = false, all_to_all = false;
  bool h_is_y = false;      // the reduce-scatter GEMM consumes the all-gather GEMM's output
  bool attention = false;   // H is computed by attention
  bool all_reduce = false;  // gemm_ar: an all-gather of the reduced blocks follows
  bool backward = false;    // mlp_bwd: weight gradients and a second gather of X
  static Layout of(Workload w, const Geometry& g) {
    Layout l;
    l.has_ag = w->patterns & kAllGatherGemm;
    l.has_rs = w->patterns & kGemmReduceScatter;
    l.all_to_all = w->patterns & kGemmAllToAll;
    l.h_is_y = g.h_source == Geometry::HSource::product;
    l.attention = w->has_heads;
    l.all_reduce = std::string(w->name) == "gemm_ar";
    l.backward = std::string(w->name) == "mlp_bwd";
    return l;
  }
};

class PlanInvariants : public ::testing::TestWithParam<Param> {
 protected:
  // Builds every rank's plan for `world` ranks and runs `body` on them, once per world size.
  void for_each_world(const std::function<void()>& body) {
    for (int world = 1; world <= kMaxWorld; ++world) {
      SCOPED_TRACE("world " + std::to_string(world));
      build(world);
      body();
    }
  }

  void build(int world) {
    workload_ = std::get<0>(GetParam());
    spec_text_ = std::get<1>(GetParam());
    world_ = world;
    spec_ = case_for(workload_, spec_text_, world_);
    plans_.clear();
    for (int r = 0; r < world_; ++r) plans_.push_back(make_plan(spec_, r));
    geometry_ = geometry(workload_, spec_.shape);
    layout_ = Layout::of(workload_, geometry_);
    tokens_ = geometry_.m;
    block_ = tokens_ / world_;
    ffn_local_ = geometry_.f / world_;
    const std::string name = spec_.strategy.strategy->name;
    param_ = spec_.strategy.param;
    is_ = [name](const char* n) { return name == n; };
  }

  bool has_ag() const { return layout_.has_ag; }
  bool is_weight_gradient(const Plan& p, const Task& t) const {
    return layout_.backward &&
           (t.c.buffer == p.buffer_id("dw1") || t.c.buffer == p.buffer_id("dw2"));
  }
  bool has_rs() const { return layout_.has_rs; }
  // The RS half's input H: its own buffer, or the AG half's output for the MLP.
  int h_buffer(const Plan& p) const {
    return p.buffer_id(layout_.h_is_y ? "y" : layout_.attention ? "o" : "h");
  }
  // attn's scores, softmax and P V tasks.
  bool is_attention(const Plan& p, const Task& t) const {
    if (!layout_.attention) return false;
    if (t.kind == TaskKind::softmax) return true;
    return t.kind == TaskKind::gemm &&
           (t.c.buffer == p.buffer_id("scores") || t.c.buffer == p.buffer_id("o"));
  }
  // A task of the AG half: reads or writes X, or writes Y with a GEMM from X.
  bool in_ag(const Plan& p, const Task& t) const {
    if (!has_ag()) return false;
    const int x = p.buffer_id("x");
    return t.a.buffer == x || t.c.buffer == x;
  }

  Workload workload_ = find_workload("mlp");
  std::string spec_text_;
  int world_ = 1;
  CaseSpec spec_;
  std::vector<Plan> plans_;
  Geometry geometry_;
  Layout layout_;
  int64_t tokens_ = 0, block_ = 0, ffn_local_ = 0;
  int param_ = 1;
  std::function<bool(const char*)> is_;
};

// 1a. Ids are 0..n-1 in order and every dependency points to an earlier task.

}  // namespace fob::plan_test
