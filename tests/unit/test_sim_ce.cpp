// The simulator's copy-engine transport (--transport ce, include/fob/machine.h "Copy
// engines"): the machine file's copy_engines section, how ce transfers and the GEMMs beside
// them are priced, where ce is refused, and that sim --tune tries it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/app/sim_costs.h"
#include "../../src/app/sim_tune.h"
#include "../common/cli_call.h"
#include "../common/machine_text.h"
#include "fob/cases.h"
#include "fob/machine.h"
#include "fob/metrics.h"
#include "fob/result_files.h"
#include "fob/sim.h"
#include "fob/strategy.h"
#include "fob/transfer_messages.h"
#include "fob/workload.h"

namespace fob {
namespace {

// 4 SMs of 1e12 flop/s each, one tile: GEMM times are easy to state. The NVLink class has an
// achieved table that ce must not use.
const char* const kCe = R"(name: ce
source: "unit test"
compute:
  bf16: {peak_tflops: 4, memory_gbytes_per_s: 3000, gemm_tiles: [[128, 128, 1]], gemm_k_overhead: 0}
gpu: {sms: 4, comm_sms: 2, max_split_k: 1}
links:
  - {name: nvlink, latency_us: 3, gbytes_per_s: 400, achieved: {all_gather: [[1048576, 10]]}}
  - {name: ib, latency_us: 5, gbytes_per_s: 50}
topology: {ranks_per_node: 8, intra_node: nvlink, inter_node: ib}
copy_engines: {count: 3, gbytes_per_s: 200, copy_us: 2}
)";

std::string replaced(const std::string& from, const std::string& to) {
  return replaced_in(kCe, from, to);
}

Machine ce_machine() {
  return parse_machine(kCe, "m.yaml");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

CaseSpec spec_of(const char* workload, const std::string& strategy, int world,
                 Shape shape = Shape{1, 4096, 1024, 4096, 0}) {
  CaseSpec spec;
  spec.workload = find_workload(workload);
  spec.shape = shape;
  spec.dtype = DType::bf16;
  spec.world = world;
  spec.strategy = parse_strategy(strategy);
  return spec;
}

double step_of(const CaseSpec& spec, const CostModel& cost) {
  return simulate_spec(spec, cost, "c").step(0);
}

TEST(SimCe, TheSectionParsesAndRoundTrips) {
  const Machine m = ce_machine();
  EXPECT_EQ(m.copy_engines.count, 3);
  EXPECT_DOUBLE_EQ(m.copy_engines.bytes_per_s, 200e9);
  EXPECT_DOUBLE_EQ(m.copy_engines.copy_s, 2e-6);
  std::ostringstream out;
  save_machine(out, m);
  EXPECT_TRUE(contains(out.str(), "copy_engines: {count: 3, gbytes_per_s: 200, copy_us: 2}"))
      << out.str();
  const Machine back = parse_machine(out.str(), "saved.yaml");
  EXPECT_EQ(back.copy_engines.count, 3);
  EXPECT_EQ(back.copy_engines.bytes_per_s, m.copy_engines.bytes_per_s);
  EXPECT_EQ(back.copy_engines.copy_s, m.copy_engines.copy_s);
  // Without the section nothing is written, and nothing read back.
  const Machine none = parse_machine(replaced("copy_engines: {count: 3, gbytes_per_s: 200, "
                                              "copy_us: 2}\n",
                                              ""),
                                     "m.yaml");
  EXPECT_EQ(none.copy_engines.count, 0);
  std::ostringstream none_out;
  save_machine(none_out, none);
  EXPECT_FALSE(contains(none_out.str(), "copy_engines")) << none_out.str();
}

TEST(SimCe, BadKeysNameTheKeyTheValueAndWhatIsValid) {
  const std::string count = machine_error_of(replaced("count: 3", "count: 0"));
  EXPECT_TRUE(contains(count, "copy_engines.count: '0' must be >= 1")) << count;
  const std::string rate = machine_error_of(replaced("gbytes_per_s: 200", "gbytes_per_s: -1"));
  EXPECT_TRUE(contains(rate, "copy_engines.gbytes_per_s: '-1' must be > 0")) << rate;
  const std::string copy = machine_error_of(replaced("copy_us: 2", "copy_us: x"));
  EXPECT_TRUE(contains(copy, "copy_engines.copy_us: 'x' is not a number")) << copy;
  const std::string unknown = machine_error_of(replaced("copy_us: 2", "copy_us: 2, engines: 1"));
  EXPECT_TRUE(contains(unknown,
                       "unknown key 'engines' in copy_engines; valid keys: count, "
                       "gbytes_per_s, copy_us"))
      << unknown;
  const std::string missing = machine_error_of(replaced("count: 3, ", ""));
  EXPECT_TRUE(contains(missing, "missing key 'count' in copy_engines")) << missing;
}

TEST(SimCe, RefusedWithoutTheSectionAndAcrossNodes) {
  const Machine none = parse_machine(replaced("copy_engines: {count: 3, gbytes_per_s: 200, "
                                              "copy_us: 2}\n",
                                              ""),
                                     "m.yaml");
  try {
    const MachineCost cost(none, TransferPath::copy_engines);
    ADD_FAILURE() << "ce priced without copy_engines";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "the machine file has no copy_engines section")) << e.what();
  }
  const MachineCost cost(ce_machine(), TransferPath::copy_engines);
  EXPECT_NO_THROW(cost.check_world(8));
  try {
    cost.check_world(16);
    ADD_FAILURE() << "ce priced across nodes";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "world 16 spans 2 nodes of 8 ranks")) << e.what();
    EXPECT_TRUE(contains(e.what(), "valid: world 1..8")) << e.what();
  }
  EXPECT_NO_THROW(MachineCost(ce_machine()).check_world(16));  // links reach every node
}

// The command: exit 2 naming the rule, for a machine without the section and for two nodes.
TEST(SimCe, TheCommandRefusesWhatCeCannotPrice) {
  const TempDir dir;
  const std::string bare = dir.file("bare.yaml");
  {
    std::ofstream(bare) << replaced("copy_engines: {count: 3, gbytes_per_s: 200, copy_us: 2}\n",
                                    "");
    std::ofstream(dir.file("ce.yaml")) << kCe;
  }
  const std::vector<std::string> args = {"sim",  "--workload",  "ag_gemm", "--dtype",
                                         "bf16", "--transport", "ce",      "--machine"};
  std::vector<std::string> no_section = args;
  no_section.insert(no_section.end(), {bare, "--world", "4"});
  CliOutcome got = call_cli(no_section, dir.file("err1"));
  EXPECT_EQ(got.code, kExitBadInput) << got.err;
  EXPECT_TRUE(contains(got.err, "the machine file has no copy_engines section")) << got.err;
  std::vector<std::string> two_nodes = args;
  two_nodes.insert(two_nodes.end(), {dir.file("ce.yaml"), "--world", "16"});
  got = call_cli(two_nodes, dir.file("err2"));
  EXPECT_EQ(got.code, kExitBadInput) << got.err;
  EXPECT_TRUE(contains(got.err, "copy engines reach peers within one node only")) << got.err;
}

// A ce transfer pays copy_us per copy and its bytes at the copy engines' rate, whatever the
// link's achieved table says; a reduce-scatter adds the receiver's adds.
TEST(SimCe, TransfersPayEachCopyAndTheirBytesAtTheEnginesRate) {
  const MachineCost ce(ce_machine(), TransferPath::copy_engines);
  const LinkRate rate = ce.link_rate(CollectiveOp::all_gather, 1 << 20, 0, 1);
  EXPECT_DOUBLE_EQ(rate.latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(rate.bytes_per_s, 200e9);
  EXPECT_DOUBLE_EQ(ce.transfer_seconds(1000, 0, 3), 2e-6 + 1000 / 200e9);
  const int n = 8;
  const double gathered = 4096.0 * 1024 * 2;  // ag_gemm's X in bf16
  const double block = gathered / n;
  EXPECT_NEAR(step_of(spec_of("ag_gemm", "comm_only", n), ce), (n - 1) * (2e-6 + block / 200e9),
              1e-12);
  // gemm_rs's reduce-scatter moves blocks of the output's size / N, each then added in while
  // the next arrives (the add is the shorter): the last add alone follows the copies.
  const double rs_block = 4096.0 * 1024 * 2 / n;
  EXPECT_NEAR(step_of(spec_of("gemm_rs", "comm_only", n), ce),
              (n - 1) * (2e-6 + rs_block / 200e9) + 3 * rs_block / 3000e9, 1e-12);
  Task a2a;
  a2a.kind = TaskKind::collective;
  a2a.op = CollectiveOp::all_to_all;
  a2a.batch = 4;
  EXPECT_EQ(ce.latencies_per_step(a2a, a2a.batch), 4);
  EXPECT_EQ(MachineCost(ce_machine()).latencies_per_step(a2a, a2a.batch), 1);
  EXPECT_EQ(MachineCost(ce_machine())
                .reduction_seconds_per_byte(CollectiveOp::reduce_scatter, DType::bf16),
            0.0);
}

// An uneven all-to-all (the mixture of experts' dispatch and combine) on copy engines: each
// step copies each span a rank sends its peer one by one (transfer_messages.h: a message per
// span), so a step lasts as long as the slowest rank's spans' copies and bytes; over NCCL's
// links a step is one message per peer.
TEST(SimCe, AnUnevenAllToAllPaysACopyPerSpan) {
  const MachineCost ce(ce_machine(), TransferPath::copy_engines);
  const int n = 4;
  const CaseSpec spec = spec_of("moe", "comm_only", n, find_workload("moe")->check_shape);
  const std::vector<Plan> plans = make_plans(spec);
  double expected = 0;
  int most_pieces = 0;
  for (const Task& t : plans[0].tasks) {
    if (t.kind != TaskKind::collective) continue;
    ASSERT_GE(t.spans, 0);
    for (int s = 1; s < n; ++s) {
      double step = 0;
      for (const Plan& p : plans) {
        const Task& mine = p.tasks[static_cast<size_t>(t.id)];
        const int to = (p.rank + s) % n;
        const auto pieces = static_cast<int>(all_to_all_blocks(p, mine).send[to].size());
        const auto bytes = static_cast<double>(all_to_all_sent_bytes(p, mine)[to]);
        if (bytes > 0) step = std::max(step, pieces * 2e-6 + bytes / 200e9);
        most_pieces = std::max(most_pieces, pieces);
      }
      expected += step;
    }
  }
  EXPECT_GT(most_pieces, 1);  // some peer gets several spans: the copies count
  EXPECT_NEAR(step_of(spec, ce), expected, 1e-12);
}

// Copy engines take no SMs: a GEMM beside a ce transfer runs on all 4, beside NCCL on 2, and
// beside a ce reduce-scatter's adds on the 2 they leave.
TEST(SimCe, AGemmBesideACeTransferKeepsAllSms) {
  const MachineCost ce(ce_machine(), TransferPath::copy_engines);
  const MachineCost links(ce_machine());
  const Task g = gemm_task(512, 128, 1024);  // 4 tiles: one wave on 4 SMs, two on 2
  const double wave = 2.0 * 128 * 128 * 1024 / 1e12;
  EXPECT_DOUBLE_EQ(ce.compute_seconds_beside_comm(g, DType::bf16, 0), wave);
  EXPECT_DOUBLE_EQ(links.compute_seconds_beside_comm(g, DType::bf16, 0), 2 * wave);
  EXPECT_DOUBLE_EQ(ce.compute_seconds_while_reducing(g, DType::bf16, 0), 2 * wave);
}

// What rank 0's reduce-scatter collectives cost the receiver on copy engines beyond the
// copies: the add of the last block received (the others run while the next block arrives),
// 3 * its bytes at the memory bandwidth. NCCL reduces as it moves; nothing else on ce may cost
// more than on NCCL.
double receiver_adds(const CaseSpec& spec, const MachineCost& ce, const Machine& m) {
  double seconds = 0;
  const std::vector<Plan> plans = plans_to_simulate(spec, ce);
  for (const Task& t : plans[0].tasks) {
    if (t.kind == TaskKind::collective && t.op == CollectiveOp::reduce_scatter) {
      const double block = static_cast<double>(t.bytes) / (spec.world - 1);
      seconds += 3.0 * block / m.compute.at(spec.dtype).memory_bytes_per_s;
    }
  }
  return seconds;
}

// The issue's check: at the same bandwidth, and a copy costing no more than the link's
// latency, every strategy is predicted no slower on ce than on NCCL at 2, 4 and 8 ranks, and
// faster where a GEMM overlaps a transfer (it keeps the SMs NCCL would take). A reduce-scatter
// collective is the exception the model states: ce adds its receiver's last add, and no more.
TEST(SimCe, NoSlowerThanNcclAtTheSameLinkBandwidth) {
  Machine m = load_machine(source_file("bench_configs/machines/h100_nvlink_ib.yaml"));
  for (LinkClass& l : m.links) l.achieved = {};
  const LinkClass& nvlink = m.links[0];
  ASSERT_EQ(nvlink.name, m.intra_node);
  m.copy_engines = {3, nvlink.bytes_per_s, nvlink.latency_s};
  const MachineCost links(m), ce(m, TransferPath::copy_engines);
  int faster = 0, checked = 0, with_adds = 0;
  for (const char* workload : {"ag_gemm", "gemm_rs", "mlp"}) {
    for (const int world : {2, 4, 8}) {
      for (const Strategy* s : all_strategies()) {
        if (!strategy_applies(*s, find_workload(workload))) continue;
        for (const int p : {1, 2, 4}) {
          const std::string name =
              s->param_name ? std::string(s->name) + ":" + std::to_string(p) : std::string(s->name);
          const CaseSpec spec = spec_of(workload, name, world, Shape{2, 4096, 8192, 8192, 0});
          try {
            validate_case(spec);
          } catch (const InputError&) {
            continue;
          }
          const double on_links = step_of(spec, links), on_ce = step_of(spec, ce);
          const double adds = receiver_adds(spec, ce, m);
          EXPECT_LE(on_ce, (on_links + adds) * (1 + 1e-12))
              << workload << " " << name << " at " << world;
          if (std::string(workload) == "ag_gemm") {
            EXPECT_EQ(adds, 0.0);
          }
          with_adds += adds > 0;
          faster += on_ce < on_links * (1 - 1e-6);
          ++checked;
          if (!s->param_name) break;
        }
      }
    }
  }
  EXPECT_GT(checked, 90);
  EXPECT_GT(with_adds, 10);
  EXPECT_GT(faster, checked / 2);
}

// --tune with transport auto prices each candidate on both paths within a node: a machine
// whose copy engines are far faster than its links picks a ce candidate, one whose copy
// engines are far slower does not, and the references are priced once.
TEST(SimCe, TuneTriesCeWithinANode) {
  Config point;
  point.workload = find_workload("ag_gemm");
  point.shape = Shape{1, 4096, 1024, 4096, 0};
  point.dtype = DType::bf16;
  point.strategies = {"baseline", "flash"};
  for (const double ce_gbytes : {4000.0, 1.0}) {
    Machine m = ce_machine();
    m.copy_engines.bytes_per_s = ce_gbytes * 1e9;
    const SimCosts costs(m, "auto", true);
    const std::vector<CaseSpec> specs = tune_cases(point, 8);
    const std::vector<PricedCase> priced = costs.price(specs);
    ResultFile file;
    std::set<std::string> ce_ids;
    int references = 0;
    for (size_t i = 0; i < priced.size(); ++i) {
      CaseResult r = simulate_spec(priced[i].spec, *priced[i].cost, "case" + std::to_string(i));
      references += r.is_reference();
      if (priced[i].cost->path() == TransferPath::copy_engines) ce_ids.insert(r.id);
      file.cases.push_back(std::move(r));
    }
    EXPECT_EQ(priced.size(), 2 * specs.size() - static_cast<size_t>(references));
    EXPECT_EQ(SimCosts::paths(priced), "links, ce");
    const std::vector<Summary> all = summarize(file);
    const std::vector<TuneRow> rows = tune_rows(all, ce_ids);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].best_ce, ce_gbytes > 1000) << rows[0].best->strategy;
    EXPECT_EQ(rows[0].candidates, 2 * (static_cast<int>(specs.size()) - references));
  }
  // Across nodes, or with the transport named, one path.
  const SimCosts costs(ce_machine(), "auto", true);
  EXPECT_EQ(SimCosts::paths(costs.price(tune_cases(point, 16))), "links");
  const SimCosts nccl(ce_machine(), "nccl", true);
  EXPECT_EQ(SimCosts::paths(nccl.price(tune_cases(point, 8))), "links");
}

// The file a ce sim writes says what it priced: /system transport and each case's fact.
TEST(SimCe, TheFileNamesTheTransportPriced) {
  const TempDir dir;
  std::ofstream(dir.file("ce.yaml")) << kCe;
  const std::string out = dir.file("ce.h5");
  const CliOutcome got =
      call_cli({"sim", "--workload", "ag_gemm", "--dtype", "bf16", "--transport", "ce", "--machine",
                dir.file("ce.yaml"), "--world", "4", "--strategies", "baseline", "-o", out},
               dir.file("err"));
  ASSERT_EQ(got.code, 0) << got.err;
  const ResultFile file = read_results(out);
  EXPECT_EQ(file.system.transport, "sim (ce)");
  ASSERT_FALSE(file.cases.empty());
  for (const CaseResult& c : file.cases) {
    EXPECT_EQ(c.facts, std::vector<std::string>{kCeFact}) << c.strategy;
  }
}

}  // namespace
}  // namespace fob
