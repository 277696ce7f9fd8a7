// An MoE case's load (moe_load.h): recorded from its plans, carried by the journal and the results
// file and refused when a file's does not fit its case; the doubt that names a rank whose experts
// took the most time; the token picture. That the load is the router's for every strategy:
// test_plans_moe.cpp.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../common/case_result_builder.h"
#include "../common/input_error.h"
#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/metrics.h"
#include "fob/pictures.h"
#include "fob/rank_stats.h"
#include "fob/report.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/strategy.h"
#include "fob/table.h"
#include "fob/workload.h"
#include "results/case_codec.h"
#include "results/journal.h"

namespace fob {
namespace {

// A moe baseline case of two ranks at moe's small shape (5 experts, skew 1.5, a capacity that
// drops), as a run records it before its timings: its key, task table and load from its plans.
CaseResult moe_run_case(const std::string& id) {
  const Workload moe = find_workload("moe");
  const CaseSpec spec{.workload = moe,
                      .shape = *moe->small_shape,
                      .dtype = DType::fp32,
                      .world = 2,
                      .strategy = parse_strategy("baseline")};
  const std::vector<Plan> plans = make_plans(spec);
  CaseResult c = case_from_plan(plans.front(), 2, id);
  std::vector<const Plan*> ranks;
  for (const Plan& p : plans) ranks.push_back(&p);
  set_task_table(c, ranks);
  return c;
}

std::string written(const TempDir& dir, const std::vector<CaseResult>& cases) {
  const std::string path = dir.file("moe.h5");
  ResultWriter writer(path, false, RunInfo{}, small_system("cpu", "mpi", 2, "host steady_clock"));
  for (const CaseResult& c : cases) writer.add_case(c);
  writer.finish();
  return path;
}

CaseResult through_codec(const CaseResult& c) {
  codec::Encoder e;
  codec::put_case(e, c);
  codec::Decoder d(e.bytes(), "test");
  return codec::get_case(d);
}

TEST(MoeLoad, RecordedForAMoeCaseOnlyAndCarriedByTheCodecAndTheFile) {
  const CaseResult c = moe_run_case("0000");
  ASSERT_FALSE(c.moe_load.empty());
  EXPECT_EQ(c.moe_load.expert_tokens.size(), 5u);
  EXPECT_EQ(through_codec(c).moe_load, c.moe_load);
  TempDir dir;
  const ResultFile back = read_results(written(dir, {c, small_case("0001", 2)}));
  ASSERT_EQ(back.cases.size(), 2u);
  EXPECT_EQ(back.cases[0].moe_load, c.moe_load);
  EXPECT_TRUE(back.cases[1].moe_load.empty());
}

TEST(MoeLoad, TheCodecRefusesALoadThatDoesNotFitItsCase) {
  CaseResult c = moe_run_case("0000");
  c.moe_load.expert_tokens.pop_back();
  EXPECT_TRUE(contains(input_error([&] { through_codec(c); }),
                       "case '0000''s MoE load: expert_tokens holds 4 values, not one per "
                       "expert (5)"));
  CaseResult plain = small_case("0001", 2);
  plain.moe_load = moe_run_case("0000").moe_load;
  EXPECT_TRUE(contains(input_error([&] { through_codec(plain); }), "a case without experts"));
}

// Replaces dataset `name` of /cases/0000/moe_load with `values` of `dims`.
void replace(const std::string& path, const char* name, const std::vector<int64_t>& values,
             const std::vector<hsize_t>& dims) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t group = H5Gopen2(f, "cases/0000/moe_load", H5P_DEFAULT);
  H5Ldelete(group, name, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dset =
      H5Dcreate2(group, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(dset);
  H5Sclose(space);
  H5Gclose(group);
  H5Fclose(f);
}

TEST(MoeLoad, TheReaderRefusesHostileLoadsNamingWhat) {
  const CaseResult c = moe_run_case("0000");
  const MoeLoad& m = c.moe_load;
  auto with = [](std::vector<int64_t> v, size_t at, int64_t value) {
    v.at(at) = value;
    return v;
  };
  struct Attack {
    const char* name;
    std::vector<int64_t> values;
    std::vector<hsize_t> dims;
    const char* says;
  };
  const int64_t choices = m.token_matrix[0] + m.token_matrix[1] + m.dropped[0];
  for (const Attack& a : {
           Attack{"expert_tokens", {1, 2}, {2}, "expert_tokens"},
           Attack{"rank_tokens", {1, 2, 3}, {3}, "rank_tokens"},
           Attack{"token_matrix", std::vector<int64_t>(9, 0), {3, 3}, "token_matrix"},
           Attack{"rank_tokens", with(m.rank_tokens, 0, -1), {2}, "rank_tokens[0] is -1, outside"},
           Attack{"dispatch_bytes", with(m.dispatch_bytes, 1, -8), {2}, "dispatch_bytes[1] is -8"},
           Attack{"dropped", with(m.dropped, 0, choices + 1), {2}, "dropped[0] is"},
           Attack{"rank_tokens",
                  with(m.rank_tokens, 0, m.rank_tokens[0] + 1),
                  {2},
                  "rank 0's rank_tokens"},
           Attack{"token_matrix",
                  with(m.token_matrix, 1, m.token_matrix[1] + 1),
                  {2, 2},
                  "rank 0's tokens make"},
       }) {
    TempDir dir;
    const std::string path = written(dir, {c});
    replace(path, a.name, a.values, a.dims);
    const std::string msg = input_error([&] { read_results(path); });
    EXPECT_TRUE(contains(msg, "case '/cases/0000''s moe_load")) << a.says << ": " << msg;
    EXPECT_TRUE(contains(msg, a.says)) << a.says << ": " << msg;
  }
}

// A journal of format 6 (its cases without a load): `bytes` of the current format with each
// case record's trailing load taken out, its frame and checksum made again.
std::string as_format_6(const std::string& bytes, const MoeLoad& load) {
  size_t load_bytes = 6 * sizeof(uint64_t);
  for (const auto* v : {&load.dispatch_bytes, &load.combine_bytes, &load.expert_tokens,
                        &load.rank_tokens, &load.dropped, &load.token_matrix}) {
    load_bytes += v->size() * sizeof(int64_t);
  }
  auto fnv = [](const std::string& s) {
    uint64_t h = 14695981039346656037ULL;
    for (const char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    return h;
  };
  std::string out = bytes.substr(0, 12);
  const uint32_t six = 6;
  std::memcpy(out.data() + 8, &six, sizeof six);
  for (size_t at = 12; at < bytes.size();) {
    uint32_t tag = 0;
    uint64_t length = 0;
    std::memcpy(&tag, bytes.data() + at + 4, sizeof tag);
    std::memcpy(&length, bytes.data() + at + 16, sizeof length);
    std::string head = bytes.substr(at, 24), payload = bytes.substr(at + 24, length);
    at += 24 + length + 8;
    if (tag == 2) payload.resize(payload.size() - load_bytes);
    const uint64_t new_length = payload.size();
    std::memcpy(head.data() + 16, &new_length, sizeof new_length);
    const uint64_t sum = fnv(head + payload);
    out += head + payload + std::string(reinterpret_cast<const char*>(&sum), sizeof sum);
  }
  return out;
}

TEST(MoeLoad, AJournalOfFormat6ReadsWithoutLoadsAndAResumeWritesItAnew) {
  TempDir dir;
  const CaseResult c = moe_run_case("0000");
  const std::string path = dir.file("run.h5");
  std::string partial;
  {
    ResultWriter writer(path, false, RunInfo{}, small_system("cpu", "mpi", 2, "host steady_clock"));
    writer.add_case(c);
    partial = writer.partial_path();
  }
  std::ifstream in(partial, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string old = as_format_6(bytes, c.moe_load);
  const ResultFile file = read_journal(old, "old.h5.partial");
  ASSERT_EQ(file.cases.size(), 1u);
  EXPECT_EQ(file.cases[0].key(), c.key());
  EXPECT_TRUE(file.cases[0].moe_load.empty());
  std::ofstream(partial, std::ios::binary | std::ios::trunc) << old;
  {
    ResultWriter resumed(partial);
    resumed.add_case(moe_run_case("0001"));
  }
  std::ifstream again(partial, std::ios::binary);
  const std::string now{std::istreambuf_iterator<char>(again), std::istreambuf_iterator<char>()};
  uint32_t version = 0;
  std::memcpy(&version, now.data() + 8, sizeof version);
  EXPECT_EQ(version, kJournalVersion);
  const ResultFile both = read_journal(now, "resumed");
  ASSERT_EQ(both.cases.size(), 2u);
  EXPECT_TRUE(both.cases[0].moe_load.empty());
  EXPECT_EQ(both.cases[1].moe_load, c.moe_load);
}

// ---- the doubt ------------------------------------------------------------------------------

// A moe case of two ranks and 3 iterations: per rank an expert GEMM and GLU taking `expert[r]`
// seconds together, and a gather (not an expert's) of `gather[r]`; `tokens` its rank_tokens.
CaseResult timed_moe_case(const std::vector<double>& expert, const std::vector<double>& gather,
                          const std::vector<int64_t>& tokens) {
  CaseResult c = case_result({.workload = "moe",
                              .experts = 4,
                              .top_k = 2,
                              .expert_ffn = 8,
                              .moe_skew = 2,
                              .capacity_factor = 0,
                              .moe_seed = 1,
                              .world = 2,
                              .iters = 3});
  c.round_iters = {3};
  c.max_tasks = 3;
  const auto compute = static_cast<int8_t>(StreamId::compute);
  for (int r = 0; r < 2; ++r) {
    for (const auto& [task, kind] : {std::pair{0, TaskKind::gemm}, std::pair{1, TaskKind::glu},
                                     std::pair{2, TaskKind::gather}}) {
      c.tasks.push_back(TaskRecord{r, task, compute, static_cast<int8_t>(kind), -1, 0,
                                   kind == TaskKind::gemm ? 1e6 : 0.0, to_string(kind)});
    }
  }
  for (int i = 0; i < c.iters; ++i) {
    for (int r = 0; r < 2; ++r) {
      const double gemm = 0.8 * expert[r], glu = 0.2 * expert[r];
      c.step_seconds.push_back(expert[r] + gather[r]);
      for (const auto& [start, end] : {std::pair{0.0, gemm}, std::pair{gemm, gemm + glu},
                                       std::pair{gemm + glu, gemm + glu + gather[r]}}) {
        c.task_start.push_back(start);
        c.task_end.push_back(end);
      }
    }
  }
  c.moe_load.rank_tokens = tokens;
  return c;
}

TEST(MoeLoad, TheDoubtNamesTheRankWhoseExpertsTookTheMostTime) {
  // Rank 0's gather is long, but a gather is not an expert's: rank 1's experts are 1.5x the mean.
  const CaseResult c = timed_moe_case({1.2e-3, 3.6e-3}, {5e-3, 1e-4}, {30, 70});
  const RankSpread s = rank_spread(c);
  EXPECT_EQ(s.hot_expert_rank, 1);
  EXPECT_NEAR(s.expert_max / s.expert_avg, 1.5, 1e-9);
  const std::string doubt =
      "rank 1's experts took 1.50x the ranks' mean expert time (70% of the routed tokens)";
  EXPECT_EQ(hot_expert_doubt(s), doubt);
  ResultFile file;
  file.system = small_system("cpu", "mpi", 2, "host steady_clock");
  file.cases = {c};
  EXPECT_TRUE(contains(summarize(file).at(0).doubts, doubt)) << summarize(file).at(0).doubts;
  std::ostringstream report;
  write_report(report, file, parse_table_format("md"));
  EXPECT_TRUE(contains(report.str(), doubt)) << report.str();
}

TEST(MoeLoad, NoDoubtForBalancedExpertsOrACaseWithoutExperts) {
  const RankSpread even = rank_spread(timed_moe_case({2e-3, 2.2e-3}, {0, 0}, {50, 50}));
  EXPECT_EQ(even.hot_expert_rank, 1);
  EXPECT_EQ(hot_expert_doubt(even), "");
  CaseResult plain = timed_moe_case({1e-3, 9e-3}, {0, 0}, {});
  plain.workload = "mlp";
  plain.experts = plain.top_k = plain.expert_ffn = plain.moe_seed = 0;
  plain.moe_skew = 0;
  const RankSpread s = rank_spread(plain);
  EXPECT_EQ(s.hot_expert_rank, -1);
  EXPECT_EQ(hot_expert_doubt(s), "");
}

// ---- the picture ----------------------------------------------------------------------------

TEST(MoeLoad, ThePictureHasACellPerRankPairWithItsTokens) {
  ResultFile file;
  file.system = small_system("cpu", "mpi", 2, "host steady_clock");
  file.cases = {small_case("0000", 2), moe_run_case("0001")};
  std::ostringstream out;
  write_tokens_svg(out, file, "");
  const std::string svg = out.str();
  const std::regex cell(
      "class=\"cell\" data-source=\"([0-9]+)\" data-dest=\"([0-9]+)\" data-tokens=\"([0-9]+)\"");
  std::map<std::pair<int64_t, int64_t>, int64_t> cells;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator();
       ++it) {
    cells[{std::stoll((*it)[1]), std::stoll((*it)[2])}] = std::stoll((*it)[3]);
  }
  const MoeLoad& m = file.cases[1].moe_load;
  ASSERT_EQ(cells.size(), 4u) << svg;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(cells[std::make_pair(i, j)], m.token_matrix[i * 2 + j]);
  }
  EXPECT_TRUE(contains(svg, "experts 5, top_k 2, moe_skew 1.5, capacity_factor 1.25")) << svg;
  // One bar per expert, and the dropped choices' count.
  size_t bars = 0;
  for (size_t at = svg.find("class=\"expert\""); at != std::string::npos;
       at = svg.find("class=\"expert\"", at + 1)) {
    ++bars;
  }
  EXPECT_EQ(bars, 5u);
  int64_t dropped = 0;
  for (const int64_t v : m.dropped) dropped += v;
  EXPECT_TRUE(
      contains(svg, "dropped by the capacity: " + std::to_string(dropped) + " of 48 choices"))
      << svg;
}

// Past 128 experts a bar each would be under 7 px wide (a million experts, a million
// rectangles): the picture draws the 128 busiest, busiest first, and says what the rest took.
TEST(MoeLoad, ThePictureOfManyExpertsBarsTheBusiestFirst) {
  ResultFile file;
  file.system = small_system("cpu", "mpi", 2, "host steady_clock");
  file.cases = {moe_run_case("0000")};
  std::vector<int64_t>& tokens = file.cases[0].moe_load.expert_tokens;
  tokens.resize(1000);
  for (size_t e = 0; e < tokens.size(); ++e) tokens[e] = static_cast<int64_t>((e * 37) % 101);
  tokens[999] = 500;
  std::ostringstream out;
  write_tokens_svg(out, file, "");
  const std::string svg = out.str();
  const std::regex bar("class=\"expert\" data-expert=\"([0-9]+)\"");
  std::vector<int64_t> drawn;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator();
       ++it) {
    drawn.push_back(std::stoll((*it)[1]));
  }
  std::vector<int64_t> busiest(tokens.size());
  for (size_t e = 0; e < busiest.size(); ++e) busiest[e] = static_cast<int64_t>(e);
  std::stable_sort(busiest.begin(), busiest.end(), [&](int64_t a, int64_t b) {
    return tokens[static_cast<size_t>(a)] > tokens[static_cast<size_t>(b)];
  });
  busiest.resize(128);
  EXPECT_EQ(drawn, busiest);
  int64_t others = 0;
  for (size_t e = 0; e < tokens.size(); ++e) others += tokens[e];
  for (const int64_t e : busiest) others -= tokens[static_cast<size_t>(e)];
  EXPECT_TRUE(contains(svg, "the 128 busiest of 1000 experts, busiest first; the other 872 took " +
                                std::to_string(others) + " choices"))
      << svg;
}

TEST(MoeLoad, ThePictureRefusesACaseWithoutExperts) {
  ResultFile file;
  file.system = small_system("cpu", "mpi", 2, "host steady_clock");
  file.cases = {small_case("0000", 2)};
  std::ostringstream out;
  EXPECT_TRUE(contains(input_error([&] { write_tokens_svg(out, file, "0000"); }),
                       "--tokens: case 0000 (workload ag_gemm) has no experts"));
  EXPECT_TRUE(contains(input_error([&] { write_tokens_svg(out, file, ""); }),
                       "no case in the file records an MoE load"));
}

}  // namespace
}  // namespace fob
