// The MoE layer's shape as config keys and as part of a case's identity. Bad values name the
// key, the value and the range (on the command line: test_bad_input.cpp's MoE cases), and so
// does a key set for a config without a workload with experts. A workload with experts records
// the resolved shape in its case key (so that spelling a default or leaving it out is one case),
// every other workload zeros (so that their key texts stay as they were). The keys against a
// workload registered with experts: e2e/moe_keys_toy_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/expert_workload.h"
#include "../common/input_error.h"
#include "fob/case_key.h"
#include "fob/config.h"
#include "fob/moe_keys.h"
#include "fob/workload.h"

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

}  // namespace
}  // namespace fob
