// Workloads: which buffers exist, which inputs fill them, and how a strategy's halves compose.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fob/plan.h"
#include "fob/strategy.h"
#include "fob/tolerance.h"

namespace fob {

struct CaseSpec {
  Workload workload = default_workload();
  Shape shape;
  DType dtype = DType::fp32;
  int world = 1;
  StrategySpec strategy;
  // A check mode: the plans of a `world`-rank case, run by one process whose every transfer
  // goes to itself. The inputs repeat with a period that divides every shard (see
  // loopback_period), so what a rank receives from itself is what its peer would have sent and
  // the output is the `world`-rank output, verified against the usual oracle.
  bool loopback = false;
};

// A workload's GEMMs in the roles the strategies know. M rows are split over the ranks (the
// dimension gathered before, or scattered after, the GEMM); D is the all-gather GEMM's
// contraction and the reduce-scatter GEMM's output width; F is sharded across ranks. Each
// workload (src/workloads/, docs/method.md#the-workload-table) sets the extents and tensor
// names its layout gives these roles.
struct Geometry {
  int64_t m = 0, d = 0, f = 0;
  int64_t ag_f = 0;                 // the all-gather GEMM's output width over all ranks (0: f)
  const char* m_key = "batch*seq";  // the config keys behind m and f, for messages
  const char* f_key = "ffn";
  // F is split across ranks, so it must divide by the world; moe's experts each keep theirs
  // whole (the experts are what it splits).
  bool f_split = true;
  const char* x = "X";    // the all-gathered input [m, d]
  const char* w1 = "W1";  // the all-gather GEMM's weight [d, f], rank r holding columns r
  const char* h = "H";    // the reduce-scatter GEMM's input [m, f], rank r holding columns r
  const char* w2 = "W2";  // its weight [f, d], rank r holding rows r
  // > 0: W1 is a selection matrix over this many rows (inputs.h), whose products stay bounded
  // (attention's WQKV keeps its scores small); 0: a dense integer matrix.
  int64_t w1_select = 0;
  // Where the reduce-scatter GEMM's H comes from, for the oracle: the input tensor `h`, the
  // all-gather GEMM's output, or the attention of that output's Q, K and V.
  enum class HSource : uint8_t { input, product, attention } h_source = HSource::input;
  int64_t seq = 0, heads = 0, head_dim = 0;
};
// The extents every layout starts from: m tokens, d hidden, f ffn.
Geometry layer_geometry(const Shape& shape);
Geometry geometry(Workload workload, const Shape& shape);
// Whether the workload a results file names has attention heads (false for a name this
// version does not know).
bool has_heads(const std::string& workload);
// The same for the MoE keys (WorkloadDef::has_experts).
bool has_experts(const std::string& workload);
// The workloads the MoE keys apply to, comma separated; empty when none is registered.
std::string expert_workloads();

// The collective patterns a workload's plan asks strategies for (strategy.h's halves), as bits:
// a strategy applies to a workload when it has every pattern the workload uses.
enum Pattern : unsigned {
  kAllGatherGemm = 1u << 0,      // Strategy::all_gather_gemm
  kGemmReduceScatter = 1u << 1,  // Strategy::gemm_reduce_scatter
  kAllGatherBlocks = 1u << 2,    // Strategy::all_gather_blocks
  kGemmAllToAll = 1u << 3,       // Strategy::gemm_all_to_all
  kAllToAllGemm = 1u << 4,       // Strategy::all_to_all_gemm
  kMoeLayer = 1u << 5,           // Strategy::moe_layer
};

// A workload: one entry of the workload table (src/workloads/registry.cpp), defined in a file
// of its own under src/workloads/, or registered from outside with register_workload. The rest
// of fobench asks the entry, never the name.
struct WorkloadDef {
  const char* name = nullptr;
  const char* summary = nullptr;
  // The extents and tensor names of a shape (start from layer_geometry).
  Geometry (*geometry)(const Shape& shape) = nullptr;
  // Builds a rank's plan around the strategy's halves: buffers, inputs, tasks and checks
  // (layer.h has the building blocks the built-in layouts share).
  void (*build)(PlanBuilder& builder, const CaseSpec& spec, const Geometry& g) = nullptr;
  unsigned patterns = 0;  // Pattern bits the build asks strategies for
  // Whether H is computed between the halves (attention's O), so that a query-split strategy
  // (Strategy::query_split) can interleave it with the reduce-scatter.
  bool computed_h = false;
  bool has_heads = false;  // the config key `heads` applies; reports name it
  // The MoE keys (experts, top_k, expert_ffn, moe_skew, capacity_factor, moe_seed) apply, and
  // its cases' keys record the shape's resolved MoE fields; any other workload's record zeros.
  bool has_experts = false;
  // Checks beyond the shared ones (world, sizes, the split extents dividing by the world):
  // throw InputError naming the key, the value and what would be valid. nullptr: none.
  void (*validate)(const CaseSpec& spec, const Geometry& g) = nullptr;
  // A further extent every loopback input period must divide (attention: the sequence), 0: none.
  int64_t (*loopback_extent)(const Geometry& g, int world) = nullptr;
  // Why one process cannot run a larger world's plans (CaseSpec::loopback) for this workload,
  // for the message that refuses it; nullptr: it can.
  const char* no_loopback = nullptr;
  // plan_rotation_period's answer; nullptr: 1 (every rank's plan a rotation of rank 0's).
  int (*rotation_period)(const CaseSpec& spec, const Geometry& g) = nullptr;
  // A check's expected values; nullptr: the shared oracle (oracle.h), which knows every
  // CheckKind the built-in layouts use.
  std::vector<double> (*expected)(const Plan& plan, const OutputCheck& check,
                                  uint64_t seed) = nullptr;
  // A check's tolerance; nullptr: tolerance.h's verify_tolerance for the dtype and world.
  Tolerance (*tolerance)(const Plan& plan, CheckKind kind) = nullptr;
  // The shapes the test suites and the GPU bundle run it at: `check_shape` divides by 1..4
  // ranks and the strategies' parameters with a loopback period above 1 (the default: 144
  // tokens in sequences of 72, which straddle the 48-row blocks of 3 ranks, hidden = ffn = 144,
  // 12 heads of 12); `small_shape`, where set, is for where every element access is checked
  // (the cuda model), in fewer configurations.
  Shape check_shape{2, 72, 144, 144, 12};
  std::optional<Shape> small_shape = std::nullopt;
  // A workload whose plan is a part of another's (ag_gemm of mlp): the bundle's GPU checks,
  // which have a time budget, run the whole instead.
  const char* part_of = nullptr;
};

// Every workload built in, in table order, then any registered since.
const std::vector<Workload>& all_workloads();
// Adds a workload defined elsewhere (a test's toy, a plugin): from then on it runs, verifies,
// reports, simulates and calibrates like a built-in one. `def` must outlive every use; a name
// taken already is a logic_error.
void register_workload(const WorkloadDef& def);
Workload find_workload(const std::string& name);  // nullptr when none has that name
// The shape a workload's checks run at, as `fobench run` options: "--batch 2 --seq 96 ...".
std::string shape_options(const Shape& shape);

// Throws InputError when the shape does not divide by the world size or the strategy's
// parameter, naming the key, the value and what would be valid.
void validate_case(const CaseSpec& spec);

Plan make_plan(const CaseSpec& spec, int rank);
// The smallest p with which rank r + p's plan is rank r's with every peer moved by p (sim.h's
// is_rotation_of), as the geometry makes it: 1 but for attention, whose query tiling sees
// where sequences cross the ranks' blocks. At most world.
int plan_rotation_period(const CaseSpec& spec);
// Every rank's plan of the case, rank by rank: what the simulator prices.
std::vector<Plan> make_plans(const CaseSpec& spec);

// The period with which a loopback case's inputs repeat: the greatest common divisor of every
// extent a rank's shard or block spans (and of the sequence length for attention, so that all
// sequences are equal too). Throws InputError when it is 1 (every input would be one value).
int64_t loopback_period(const CaseSpec& spec);

}  // namespace fob
