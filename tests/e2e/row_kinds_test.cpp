// The mixture-of-experts layer's task kinds (gather, glu) run by a backend on a plan made here,
// every output compared exactly with values worked out from the backend's own inputs: a
// dispatch gather from a view that starts past its buffer's first row, with repeated and
// missing sources; glu; a weighted combine that accumulates; a weighted gather that zeroes
// its rows without a source (over poisoned memory). The CPU backend always; with
// --cuda=TRANSPORT also the cuda backend over that transport, whose allocator holds the row
// maps (the cuda model tier runs it so over nccl, mpi and ce: tests/cuda_model/module), which
// must give the CPU backend's bytes in fp32 and fp64 and the same exact values in bf16. One
// rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../common/mpi_gtest.h"
#include "fob/backend.h"
#include "fob/plan.h"
#include "fob/plan_builder.h"

namespace fob {
namespace {

std::string g_cuda_transport;  // --cuda=TRANSPORT: the cuda backend must load and run too

constexpr int64_t kWidth = 4;
const RowMap kDispatch{{4, 0, 0, -1, 3, 2, 4}, {}};                // X rows 1..5 -> Xs
const RowMap kCombine{{0, -1, 6, 1, 1, 2}, {1, 2, 0, -1, 3, 1}};   // H -> Y, accumulating
const RowMap kScatter{{-1, 6, 0, 3, 2, -1}, {2, 1, -3, 1, 1, 4}};  // Xs -> Z

void add_input(PlanBuilder& builder, int buffer, const char* tensor) {
  InputRegion region;
  region.buffer = buffer;
  region.rows = builder.rows(buffer);
  region.tensor = tensor;
  builder.input(region);
}

Plan moe_plan(DType dtype) {
  Plan plan;
  plan.dtype = dtype;
  PlanBuilder b(plan);
  const int x = b.buffer("X", 6, kWidth);
  const int u = b.buffer("U", 7, 2 * kWidth);
  const int y0 = b.buffer("Y0", 6, kWidth);
  add_input(b, x, "X");
  add_input(b, u, "U");
  add_input(b, y0, "Y");
  const int xs = b.buffer("Xs", 7, kWidth);
  const int h = b.buffer("H", 7, kWidth);
  const int y = b.buffer("Y", 6, kWidth);
  const int z = b.buffer("Z", 6, kWidth);
  b.gather(View{xs, 0, 7}, View{x, 1, 5}, kDispatch, false, "dispatch");
  b.glu(View{h, 0, 7}, View{u, 0, 7}, "act");
  b.copy(View{y, 0, 6}, View{y0, 0, 6}, "y");
  b.gather(View{y, 0, 6}, View{h, 0, 7}, kCombine, true, "combine");
  b.gather(View{z, 0, 6}, View{xs, 0, 7}, kScatter, false, "scatter");
  return plan;
}

using Buffers = std::map<std::string, std::vector<double>>;

// One iteration, every buffer read back (scratch poisoned with NaN first).
Buffers run(Backend& backend, const Plan& plan) {
  backend.setup(plan);
  backend.poison(plan);
  backend.begin(plan, false);
  const std::vector<int> none;  // every task is on the compute stream
  for (const Task& t : plan.tasks) backend.launch(t, none);
  backend.finish(60);
  Buffers out;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    out[plan.buffers[i].name] = backend.read(plan, static_cast<int>(i));
  }
  backend.release(plan);
  return out;
}

// dst row i (=|+=) weight * src row map.src[i] (src's rows from `first`).
void gather_rows(std::vector<double>& dst, const std::vector<double>& src, int64_t first,
                 const RowMap& map, bool accumulate) {
  for (size_t i = 0; i < map.src.size(); ++i) {
    const double w = map.weight.empty() ? 1 : map.weight[i];
    for (int64_t j = 0; j < kWidth; ++j) {
      double& out = dst[i * kWidth + j];
      const double in = map.src[i] < 0 ? 0 : w * src[(first + map.src[i]) * kWidth + j];
      out = accumulate ? out + in : in;
    }
  }
}

// What every scratch buffer must hold, from the inputs the backend generated.
Buffers expected(const Buffers& got) {
  Buffers want = got;
  gather_rows(want["Xs"], got.at("X"), 1, kDispatch, false);
  const std::vector<double>& u = got.at("U");
  for (int64_t i = 0; i < 7; ++i) {
    for (int64_t j = 0; j < kWidth; ++j) {
      const double gate = u[i * 2 * kWidth + j], up = u[i * 2 * kWidth + kWidth + j];
      want["H"][i * kWidth + j] = (gate > 0 ? gate : 0) * up;
    }
  }
  want["Y"] = got.at("Y0");
  gather_rows(want["Y"], want["H"], 0, kCombine, true);
  gather_rows(want["Z"], want["Xs"], 0, kScatter, false);
  return want;
}

void expect_exact(const Buffers& got, const Buffers& want, const std::string& what) {
  for (const auto& [name, values] : want) {
    ASSERT_EQ(got.at(name).size(), values.size()) << what << " " << name;
    for (size_t e = 0; e < values.size(); ++e) {
      ASSERT_EQ(got.at(name)[e], values[e])
          << what << ": " << name << "[" << e / kWidth << ", " << e % kWidth << "]";
    }
  }
}

// The inputs hold -1, 0 and 1 in every buffer, so the test sees every sign through glu.
void expect_inputs_varied(const Buffers& got) {
  for (const char* name : {"X", "U", "Y0"}) {
    for (double v : {-1.0, 0.0, 1.0}) {
      EXPECT_NE(std::count(got.at(name).begin(), got.at(name).end(), v), 0) << name << " " << v;
    }
  }
}

TEST(RowKinds, CpuBackendGathersAndGatesExactly) {
  auto cpu = make_cpu_backend({});
  for (DType dtype : {DType::fp32, DType::fp64}) {
    const Plan plan = moe_plan(dtype);
    const Buffers got = run(*cpu, plan);
    expect_inputs_varied(got);
    expect_exact(got, expected(got), std::string("cpu ") + to_string(dtype));
  }
}

TEST(RowKinds, CudaBackendGivesTheCpuBackendsBytes) {
  if (g_cuda_transport.empty()) GTEST_SKIP() << "with --cuda=TRANSPORT only (the cuda model tier)";
  auto cpu = make_cpu_backend({});
  BackendOptions options;
  options.transport = g_cuda_transport;
  auto cuda = make_cuda_backend(options);
  for (DType dtype : {DType::fp32, DType::fp64}) {
    const Plan plan = moe_plan(dtype);
    const Buffers on_cpu = run(*cpu, plan);
    const Buffers on_cuda = run(*cuda, plan);
    const std::string what = std::string("cuda ") + to_string(dtype);
    expect_exact(on_cuda, on_cpu, what);
    expect_exact(on_cuda, expected(on_cuda), what);
  }
  // The CPU backend has no bf16: its exact values, which every intermediate holds in bf16.
  const Plan plan = moe_plan(DType::bf16);
  const Buffers got = run(*cuda, plan);
  expect_inputs_varied(got);
  expect_exact(got, expected(got), "cuda bf16");
}

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  const char* flag = "--cuda=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
      fob::g_cuda_transport = argv[i] + std::strlen(flag);
  }
  return fob::mpi_gtest_main(argc, argv);
}
