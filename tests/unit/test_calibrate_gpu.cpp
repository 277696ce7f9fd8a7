// calibrate() on a cuda run's files (calibrate_gpu.cpp): the timings come from a known GPU
// machine file (the wave model, a GEMM memory efficiency, NCCL's achieved rates, the SMs NCCL
// takes and a slowdown beside transfers), priced by the simulator over the real plans; the fit
// must give the machine back, and price what it was fitted to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../common/measured_case.h"
#include "fob/calibrate.h"
#include "fob/machine.h"

namespace fob {
namespace {

// 16 SMs of 1e12 flop/s; thin wide GEMMs are bound by a GEMM's half of the 1e11 B/s memory rate.
const char* const kKnownGpu = R"(name: known
source: "unit test"
compute:
  bf16:
    peak_tflops: 16
    memory_gbytes_per_s: 100
    gemm_tiles:
      - [128, 256, 1]
      - [256, 128, 1]
      - [128, 128, 0.8]
      - [64, 128, 0.6]
      - [64, 64, 0.3]
    gemm_k_overhead: 64
    gemm_memory_efficiency: 0.5
gpu: {sms: 16, comm_sms: 4, max_split_k: 1}
links:
  - name: nvlink
    latency_us: 3
    gbytes_per_s: 100
    achieved:
      all_gather: [[65536, 2], [1048576, 20], [16777216, 80]]
      reduce_scatter: [[65536, 1.5], [1048576, 15], [16777216, 70]]
      send_recv: [[65536, 3], [16777216, 90]]
topology: {ranks_per_node: 8, intra_node: nvlink, inter_node: nvlink}
contention: 1.1
)";

Shape shape(int64_t tokens, int64_t hidden) {
  Shape s;
  s.batch = 1;
  s.seq = tokens;
  s.hidden = hidden;
  s.ffn = 4 * hidden;
  return s;
}

// compute_only over shapes from a few tiles to many waves, the others at two sizes.
ResultFile cuda_file(const MachineCost& known, int world) {
  std::vector<CaseResult> cases;
  int id = 0;
  const auto add = [&](const char* workload, int64_t tokens, int64_t hidden, const char* strategy) {
    cases.push_back(measured_case(find_workload(workload), shape(tokens, hidden), strategy, world,
                                  std::string("c").append(std::to_string(id++)), false, known,
                                  DType::bf16));
  };
  for (const char* workload : {"ag_gemm", "gemm_rs"}) {
    for (const int64_t tokens : {128, 512, 2048}) {
      for (const int64_t hidden : {256, 1024, 4096}) add(workload, tokens, hidden, "compute_only");
    }
    for (const int64_t tokens : {512, 2048}) {
      for (const char* strategy : {"comm_only", "baseline", "decompose"}) {
        add(workload, tokens, 1024, strategy);
      }
    }
  }
  ResultFile f = measured_file(std::move(cases), world);
  f.system.backend = "cuda";
  f.system.transport = "nccl";
  f.system.link_emulation = "none";
  for (int r = 0; r < world; ++r) {
    f.system.hardware += "rank " + std::to_string(r) + ": comm_sms=4 of 16\n";
  }
  return f;
}

bool has_note(const FitReport& rep, const std::string& part) {
  return std::any_of(rep.notes.begin(), rep.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

TEST(CalibrateGpu, RecoversTheWaveModelAndNcclRates) {
  const int world = 4;
  const Machine truth = parse_machine(kKnownGpu, "known.yaml");
  const MachineCost known(truth);
  FitReport rep;
  const Machine m = calibrate({cuda_file(known, world)}, "fitted", &rep);

  EXPECT_EQ(m.gpu.sms, 16);
  EXPECT_EQ(m.gpu.comm_sms, 4);
  ASSERT_EQ(m.compute.count(DType::bf16), 1U);
  const ComputeModel& cm = m.compute.at(DType::bf16);
  EXPECT_TRUE(cm.gemm_efficiency.empty());
  ASSERT_EQ(cm.gemm_tiles.size(), 5U);
  EXPECT_NEAR(cm.gemm_memory_efficiency, 0.5, 0.02);
  EXPECT_NEAR(cm.peak_flops / 16e12, 1.0, 0.02);

  // Every GEMM measured priced as it ran.
  int gemms = 0;
  for (const FitReport::Residual& r : rep.residuals) {
    if (r.what.rfind("gemm ", 0) != 0) continue;
    ++gemms;
    EXPECT_NE(r.what.find("on 16 SMs"), std::string::npos) << r.what;
    EXPECT_NEAR(r.fitted_s / r.measured_s, 1.0, 0.02) << r.what;
  }
  EXPECT_GE(gemms, 6);

  // NCCL's rates at the sizes comm_only ran, as the known tables give them.
  const LinkClass& link = m.links.at(0);
  for (const CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    const std::vector<RatePoint>& table = link.achieved[static_cast<size_t>(achieved_index(op))];
    ASSERT_FALSE(table.empty()) << achieved_name(achieved_index(op));
    for (const RatePoint& p : table) {
      const double want = known.link_rate(op, p.bytes, 0, 1).bytes_per_s;
      EXPECT_NEAR(p.bytes_per_s / want, 1.0, 1e-6)
          << achieved_name(achieved_index(op)) << " " << p.bytes;
    }
  }
  EXPECT_TRUE(has_note(rep, "gpu: sms 16, comm_sms 4"));
  EXPECT_TRUE(has_note(rep, "bf16 wave model"));
  EXPECT_TRUE(has_note(rep, "tiles measured by the shapes: 128x256, 256x128, 64x128;"));

  // A GEMM beside a transfer, against the fitted model on the SMs NCCL left: the slowdown, up
  // to the tiles no whole-GPU shape chose (the 128 x 128 tile's efficiency is not measured here,
  // and a slice on 12 SMs may take it).
  EXPECT_NEAR(m.contention, 1.1, 0.06);
  EXPECT_NEAR(cm.gemm_k_overhead, 64, 1e-9);
  EXPECT_EQ(m.gpu.max_split_k, 1);
  EXPECT_NEAR(m.transfer_contention, 1.0, 1e-6);

  // The fitted machine prices the measured cases as the known one did.
  const MachineCost fitted(m);
  for (const char* strategy : {"baseline", "decompose"}) {
    CaseSpec spec;
    spec.workload = find_workload("ag_gemm");
    spec.shape = shape(2048, 1024);
    spec.dtype = DType::bf16;
    spec.world = world;
    spec.strategy = parse_strategy(strategy);
    const double want = simulate_spec(spec, known, "k").step(0);
    const double got = simulate_spec(spec, fitted, "f").step(0);
    EXPECT_NEAR(got / want, 1.0, 0.05) << strategy;
  }
}

// The known machine's cuda file, edited by `change`, fitted.
template <typename Change>
Machine fitted_with(Change change, FitReport& rep) {
  ResultFile f = cuda_file(MachineCost(parse_machine(kKnownGpu, "known.yaml")), 4);
  change(f);
  return calibrate({f}, "edited", &rep);
}

// A cpu run's file is fitted as before: no GPU section, no tiles.
TEST(CalibrateGpu, CpuFilesGetNoWaveModel) {
  FitReport rep;
  const Machine m = fitted_with([](ResultFile& f) { f.system.backend = "cpu"; }, rep);
  EXPECT_EQ(m.gpu.sms, 0);
  EXPECT_TRUE(m.compute.at(DType::bf16).gemm_tiles.empty());
  EXPECT_FALSE(m.compute.at(DType::bf16).gemm_efficiency.empty());
  for (const LinkClass& l : m.links) {
    for (const auto& table : l.achieved) EXPECT_TRUE(table.empty());
  }
}

// A cuda file whose facts do not give the SMs says so and fits no wave model.
TEST(CalibrateGpu, NoSmCountNoWaveModel) {
  FitReport rep;
  const Machine m =
      fitted_with([](ResultFile& f) { f.system.hardware = "rank 0: nccl=2.29\n"; }, rep);
  EXPECT_EQ(m.gpu.sms, 0);
  EXPECT_TRUE(has_note(rep, "no wave model"));
}

}  // namespace
}  // namespace fob
