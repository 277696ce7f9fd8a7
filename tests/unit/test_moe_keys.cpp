// The MoE layer's shape as config keys and as part of a case's identity. Bad values name the
// key, the value and the range (on the command line: test_bad_input.cpp's MoE cases), and so
// does a key set for a config without a workload with experts. A workload with experts records
// the resolved shape in its case key (so that spelling a default or leaving it out is one case),
// every other workload zeros (so that their key texts stay as they were). The journal and the
// results file carry the six fields and refuse values no run records. The keys against a
// workload registered with experts: e2e/moe_keys_toy_test.cpp.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "../common/expert_workload.h"
#include "../common/input_error.h"
#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/case_key.h"
#include "fob/config.h"
#include "fob/moe_keys.h"
#include "fob/result_files.h"
#include "fob/results.h"
#include "fob/workload.h"
#include "results/case_codec.h"
#include "results/journal.h"

namespace fob {
namespace {

// A workload with experts that is never registered, so that the table every other test reads
// stays the built-in one: only what asks the entry (not the name) sees it.
constexpr WorkloadDef kUnlistedMoe = expert_workload("unlisted_moe");

constexpr MoeShape kAllSet = {16, 4, 96, 1.25, 1.5, 7};

// ---- the keys' values -----------------------------------------------------------------------

TEST(MoeKeys, YamlValuesAreCheckedWhereWritten) {
  Config c;
  const std::string zero = input_error([&] { apply_yaml(c, "batch: 2\nexperts: 0\n", "m.yaml"); });
  EXPECT_TRUE(contains(zero, "m.yaml:2: experts: 0 is out of range; valid: 1 to")) << zero;
  const std::string listed = input_error([&] { apply_yaml(c, "top_k: [1, 0]\n", "m.yaml"); });
  EXPECT_TRUE(contains(listed, "m.yaml:1: top_k: 0 is out of range")) << listed;
  const std::string cased =
      input_error([&] { apply_yaml(c, "cases: [{moe_seed: -1}]\n", "m.yaml"); });
  EXPECT_TRUE(contains(cased, "moe_seed: -1 is out of range")) << cased;
}

TEST(MoeKeys, RefusedForAConfigWithoutExpertsNamingTheWorkloads) {
  Config c;
  c.shape.moe.capacity_factor = 2;
  const std::string msg = input_error([&] { validate_config(c); });
  EXPECT_TRUE(
      contains(msg, "capacity_factor: 2 applies to workloads with experts only, not to mlp"))
      << msg;
  const std::string valid = expert_workloads();
  EXPECT_TRUE(contains(msg, "valid workloads: " + (valid.empty() ? "none in this build" : valid)))
      << msg;
  // Every workload of a sweep is named once.
  c.sweep["workload"] = {"mlp", "attn", "mlp"};
  const std::string swept = input_error([&] { validate_config(c); });
  EXPECT_TRUE(contains(swept, "not to mlp, attn;")) << swept;
}

TEST(MoeKeys, AcceptedForAWorkloadWithExperts) {
  Config c;
  c.workload = &kUnlistedMoe;
  c.shape.moe = kAllSet;
  EXPECT_NO_THROW(validate_config(c));
  // The experts' weights are sized as every other tensor is: past 2^50 elements, refused.
  c.shape.hidden = 1 << 20;
  c.shape.moe.experts = kMaxExperts;
  c.shape.moe.top_k = 1;
  c.shape.moe.expert_ffn = 1 << 20;
  const std::string msg = input_error([&] { validate_config(c); });
  EXPECT_TRUE(contains(msg, "shape: experts x hidden x expert_ffn")) << msg;
}

TEST(MoeKeys, ConfigTextLeavesThemOutUntilSetThenRoundTrips) {
  const std::string plain = Config{}.to_yaml();
  for (const char* key :
       {"experts", "top_k", "expert_ffn", "moe_skew", "capacity_factor", "moe_seed"}) {
    EXPECT_FALSE(contains(plain, std::string("\n") + key + ":")) << key << " in\n" << plain;
  }
  Config c;
  c.workload = &kUnlistedMoe;
  c.shape.moe = kAllSet;
  const std::string text = c.to_yaml();
  EXPECT_TRUE(contains(text,
                       "\nexperts: 16\ntop_k: 4\nexpert_ffn: 96\nmoe_skew: 1.25\n"
                       "capacity_factor: 1.5\nmoe_seed: 7\n"))
      << text;
  Config back;
  apply_yaml(back,
             "experts: 16\ntop_k: 4\nexpert_ffn: 96\nmoe_skew: 1.25\n"
             "capacity_factor: 1.5\nmoe_seed: 7\n",
             "back.yaml");
  EXPECT_EQ(back.shape.moe, kAllSet);
}

// ---- the shape -------------------------------------------------------------------------------

TEST(MoeShape, AccessorsResolveTheDefaults) {
  Shape s{2, 8, 16, 0, 0};
  EXPECT_EQ(s.experts(), MoeShape::kDefaultExperts);
  EXPECT_EQ(s.top_k(), MoeShape::kDefaultTopK);
  EXPECT_EQ(s.expert_ffn(), 64);  // ffn 0 is 4 * hidden
  s.ffn = 48;
  EXPECT_EQ(s.expert_ffn(), 48);
  EXPECT_EQ(s.moe_seed(), MoeShape::kDefaultSeed);
  s.moe.experts = 1;  // the default k never exceeds the experts
  EXPECT_EQ(s.top_k(), 1);
  s.moe = kAllSet;
  EXPECT_EQ(s.experts(), 16);
  EXPECT_EQ(s.top_k(), 4);
  EXPECT_EQ(s.expert_ffn(), 96);
  EXPECT_EQ(s.moe_seed(), 7);
}

TEST(MoeShape, ShapeOptionsNameTheKeysSet) {
  Shape s{2, 8, 16, 64, 0};
  EXPECT_EQ(shape_options(s), "--batch 2 --seq 8 --hidden 16 --ffn 64");
  s.moe = kAllSet;
  EXPECT_EQ(shape_options(s),
            "--batch 2 --seq 8 --hidden 16 --ffn 64 --experts 16 --top-k 4 --expert-ffn 96 "
            "--moe-seed 7 --moe-skew 1.25 --capacity-factor 1.5");
}

// ---- the case key ----------------------------------------------------------------------------

CaseSpec spec_of(Workload workload, const MoeShape& moe) {
  CaseSpec spec;
  spec.workload = workload;
  spec.shape = Shape{2, 8, 16, 64, 0};
  spec.shape.moe = moe;
  spec.world = 2;
  spec.strategy = parse_strategy("baseline");
  return spec;
}

TEST(MoeCaseKey, RecordsTheResolvedShapeForAWorkloadWithExperts) {
  const CaseKey key = CaseKey::of(spec_of(&kUnlistedMoe, {}));
  EXPECT_EQ(key.experts, 8);
  EXPECT_EQ(key.top_k, 2);
  EXPECT_EQ(key.expert_ffn, 64);  // the shape's ffn
  EXPECT_EQ(key.moe_skew, 0.0);
  EXPECT_EQ(key.capacity_factor, 0.0);
  EXPECT_EQ(key.moe_seed, 1);
  EXPECT_EQ(key.text(),
            "unlisted_moe baseline b2 s8 h16 f64 heads0 fp32 N=2 E8 k2 F64 skew0 cap0 seed1");
  EXPECT_EQ(CaseKey::of(spec_of(&kUnlistedMoe, kAllSet)).text(),
            "unlisted_moe baseline b2 s8 h16 f64 heads0 fp32 N=2 E16 k4 F96 skew1.25 cap1.5 seed7");
}

TEST(MoeCaseKey, SpellingTheDefaultsIsTheSameCase) {
  const CaseKey left_out = CaseKey::of(spec_of(&kUnlistedMoe, {}));
  const CaseKey spelled = CaseKey::of(spec_of(&kUnlistedMoe, {8, 2, 64, 0, 0, 1}));
  EXPECT_EQ(left_out, spelled);
  EXPECT_EQ(left_out.text(), spelled.text());
  EXPECT_FALSE(left_out < spelled || spelled < left_out);
}

TEST(MoeCaseKey, EachFieldTellsCasesApart) {
  const CaseKey base = CaseKey::of(spec_of(&kUnlistedMoe, kAllSet));
  for (auto change :
       {+[](MoeShape& m) { m.experts = 32; }, +[](MoeShape& m) { m.top_k = 2; },
        +[](MoeShape& m) { m.expert_ffn = 128; }, +[](MoeShape& m) { m.skew = 1.5; },
        +[](MoeShape& m) { m.capacity_factor = 0; }, +[](MoeShape& m) { m.seed = 8; }}) {
    MoeShape moe = kAllSet;
    change(moe);
    const CaseKey other = CaseKey::of(spec_of(&kUnlistedMoe, moe));
    EXPECT_NE(other, base) << other.text();
    EXPECT_NE(other.text(), base.text());
    EXPECT_TRUE((other < base) != (base < other)) << other.text() << " unordered";
  }
}

TEST(MoeCaseKey, OtherWorkloadsRecordZerosAndKeepTheirText) {
  for (Workload w : all_workloads()) {
    if (w->has_experts) continue;
    const CaseKey key = CaseKey::of(spec_of(w, kAllSet));
    EXPECT_EQ(key.moe(), MoeShape{}) << w->name;
    EXPECT_EQ(key.text(), std::string(w->name) + " baseline b2 s8 h16 f64 heads" +
                              std::to_string(key.heads) + " fp32 N=2");
    EXPECT_EQ(key, CaseKey::of(spec_of(w, {}))) << w->name;
  }
}

// ---- the journal and the results file ---------------------------------------------------------

CaseResult moe_case(const std::string& id, const MoeShape& moe) {
  CaseResult c = small_case(id, 1);
  c.workload = "moe";
  std::tie(c.experts, c.top_k, c.expert_ffn, c.moe_skew, c.capacity_factor, c.moe_seed) =
      std::tie(moe.experts, moe.top_k, moe.expert_ffn, moe.skew, moe.capacity_factor, moe.seed);
  return c;
}

CaseKey through_codec(const CaseResult& c) {
  codec::Encoder e;
  codec::put_case(e, c);
  codec::Decoder d(e.bytes(), "test");
  return codec::get_case(d).key();
}

TEST(MoeJournal, TheCodecCarriesAllSixFields) {
  const CaseResult c = moe_case("0000", kAllSet);
  EXPECT_EQ(through_codec(c), c.key());
  EXPECT_EQ(through_codec(c).moe(), kAllSet);
  const CaseResult plain = small_case("0001", 2);
  EXPECT_EQ(through_codec(plain), plain.key());
}

TEST(MoeJournal, TheCodecRefusesFieldsNoRunRecords) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const MoeShape& moe :
       {MoeShape{kMaxExperts + 1, 2, 64, 0, 0, 1}, MoeShape{4, 5, 64, 0, 0, 1},
        MoeShape{8, 2, 64, nan, 0, 1}, MoeShape{8, 2, 64, -1, 0, 1}, MoeShape{8, 2, 64, 0, 0.01, 1},
        MoeShape{8, 2, -64, 0, 0, 1}, MoeShape{0, 2, 0, 0, 0, 0}}) {
    const std::string msg = input_error([&] { through_codec(moe_case("0000", moe)); });
    EXPECT_TRUE(contains(msg, "test: a case of ")) << msg;
  }
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(MoeJournal, AJournalOfTheFormatBeforeIsRefusedClearly) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  ResultWriter writer(path, false, RunInfo{}, small_system("cpu", "mpi", 1, "host steady_clock"));
  writer.add_case(moe_case("0000", kAllSet));
  std::string bytes = file_bytes(writer.partial_path());
  EXPECT_EQ(read_journal(bytes, "current").cases.at(0).moe(), kAllSet);
  const uint32_t before = kJournalVersionOldest - 1;
  std::memcpy(bytes.data() + 8, &before, sizeof before);  // after the 8-byte magic
  const std::string msg = input_error([&] { read_journal(bytes, "old.h5.partial"); });
  EXPECT_TRUE(contains(msg, "'old.h5.partial': journal format " + std::to_string(before) +
                                ", this fobench reads formats " +
                                std::to_string(kJournalVersionOldest) + ".." +
                                std::to_string(kJournalVersion) + " only"))
      << msg;
}

std::string written(const TempDir& dir, const std::vector<CaseResult>& cases) {
  const std::string path = dir.file("moe.h5");
  ResultWriter writer(path, false, RunInfo{}, small_system("cpu", "mpi", 1, "host steady_clock"));
  for (const CaseResult& c : cases) writer.add_case(c);
  writer.finish();
  return path;
}

bool case_has_attr(const std::string& path, const char* group, const char* name) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const bool has = H5Aexists_by_name(f, group, name, H5P_DEFAULT) > 0;
  H5Fclose(f);
  return has;
}

TEST(MoeResultsFile, RoundTripsAndOtherCasesHoldNoMoeAttributes) {
  TempDir dir;
  const std::string path = written(dir, {moe_case("0000", kAllSet), small_case("0001", 1)});
  const ResultFile back = read_results(path);
  ASSERT_EQ(back.cases.size(), 2u);
  EXPECT_EQ(back.cases[0].moe(), kAllSet);
  EXPECT_EQ(back.cases[1].moe(), MoeShape{});
  EXPECT_TRUE(case_has_attr(path, "cases/0000", "moe_skew"));
  EXPECT_FALSE(case_has_attr(path, "cases/0001", "experts"));
  // /summary has the six columns, floats as float64.
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t summary = H5Dopen2(f, "summary", H5P_DEFAULT);
  const hid_t type = H5Dget_type(summary);
  for (const char* field :
       {"experts", "top_k", "expert_ffn", "moe_skew", "capacity_factor", "moe_seed"}) {
    const int member = H5Tget_member_index(type, field);
    ASSERT_GE(member, 0) << field;
    const hid_t member_type = H5Tget_member_type(type, static_cast<unsigned>(member));
    const bool real =
        std::strcmp(field, "moe_skew") == 0 || std::strcmp(field, "capacity_factor") == 0;
    EXPECT_EQ(H5Tget_class(member_type), real ? H5T_FLOAT : H5T_INTEGER) << field;
    EXPECT_EQ(H5Tget_size(member_type), 8u) << field;
    H5Tclose(member_type);
  }
  H5Tclose(type);
  H5Dclose(summary);
  H5Fclose(f);
}

void set_attr(const std::string& path, const char* name, hid_t type, const void* value) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t group = H5Gopen2(f, "cases/0000", H5P_DEFAULT);
  if (H5Aexists(group, name) > 0) H5Adelete(group, name);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(group, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, value);
  H5Aclose(attr);
  H5Sclose(space);
  H5Gclose(group);
  H5Fclose(f);
}

TEST(MoeResultsFile, HostileFieldsAreRefusedNamingThem) {
  const int64_t too_many = kMaxExperts + 1, negative = -4, past_experts = 17;
  const double nan = std::numeric_limits<double>::quiet_NaN(), negative_skew = -2;
  struct Attack {
    const char* name;
    hid_t type;
    const void* value;
    const char* says;
  };
  for (const Attack& a : {Attack{"experts", H5T_NATIVE_INT64, &too_many, "experts: 1048577"},
                          Attack{"top_k", H5T_NATIVE_INT64, &negative, "top_k"},
                          Attack{"top_k", H5T_NATIVE_INT64, &past_experts, "top_k: 17"},
                          Attack{"moe_skew", H5T_NATIVE_DOUBLE, &nan, "moe_skew: nan"},
                          Attack{"moe_skew", H5T_NATIVE_DOUBLE, &negative_skew, "moe_skew: -2"},
                          Attack{"capacity_factor", H5T_NATIVE_DOUBLE, &nan, "capacity_factor"}}) {
    TempDir dir;
    const std::string path = written(dir, {moe_case("0000", kAllSet)});
    set_attr(path, a.name, a.type, a.value);
    const std::string msg = input_error([&] { read_results(path); });
    EXPECT_TRUE(contains(msg, a.says)) << a.name << ": " << msg;
  }
  // A case without experts that claims MoE fields.
  TempDir dir;
  const std::string path = written(dir, {small_case("0000", 1)});
  const int64_t k = 2;
  set_attr(path, "top_k", H5T_NATIVE_INT64, &k);
  const std::string msg = input_error([&] { read_results(path); });
  EXPECT_TRUE(contains(msg, "top_k: 2 recorded for a case without experts")) << msg;
}

}  // namespace
}  // namespace fob
