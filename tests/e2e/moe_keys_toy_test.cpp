// The MoE keys against the workload table: a toy workload with experts, registered by this
// program alone (so that no other test's table holds it), is the one the keys are accepted for
// and the one a refusal names; a sweep over it and a workload without experts runs the keys on
// its points only; its case keys regenerate their specs with the shape they recorded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/expert_workload.h"
#include "../common/input_error.h"
#include "fob/case_key.h"
#include "fob/cases.h"
#include "fob/config.h"
#include "fob/workload.h"

namespace fob {
namespace {

constexpr WorkloadDef kToyMoe = expert_workload("toy_moe");

Config parsed(const std::string& yaml) {
  Config c;
  apply_yaml(c, yaml, "toy.yaml");
  validate_config(c);
  return c;
}

TEST(MoeKeysToy, TheTableSaysWhichWorkloadsHaveExperts) {
  // The built-in moe, then the toy registered after it.
  EXPECT_EQ(expert_workloads(), "moe, toy_moe");
  EXPECT_TRUE(has_experts("toy_moe"));
  EXPECT_FALSE(has_experts("mlp"));
  EXPECT_FALSE(has_experts("no_such_workload"));
}

TEST(MoeKeysToy, ARefusalNamesTheWorkloadsWithExperts) {
  const std::string msg = input_error([] { parsed("workload: attn\nexperts: 16\n"); });
  EXPECT_TRUE(contains(msg,
                       "experts: 16 applies to workloads with experts only, not to attn; "
                       "valid workloads: moe, toy_moe"))
      << msg;
  EXPECT_NO_THROW(parsed("workload: toy_moe\nexperts: 16\ntop_k: 4\nmoe_skew: 0.5\n"));
}

TEST(MoeKeysToy, ASweepRunsTheKeysOnTheWorkloadWithExpertsOnly) {
  const std::vector<Config> points =
      sweep_points(parsed("workload: [mlp, toy_moe]\nexperts: 16\ntop_k: 4\nmoe_seed: 3\n"));
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].workload->name, std::string("mlp"));
  EXPECT_EQ(points[0].shape.moe, MoeShape{});
  EXPECT_EQ(points[1].workload, &kToyMoe);
  EXPECT_EQ(points[1].shape.moe, (MoeShape{16, 4, 0, 0, 0, 3}));
  // A `cases` entry may set them too, for its own point.
  const std::vector<Config> cased =
      sweep_points(parsed("workload: mlp\ncases: [{workload: toy_moe, experts: 4}, {batch: 8}]\n"));
  ASSERT_EQ(cased.size(), 2u);
  EXPECT_EQ(cased[0].shape.moe.experts, 4);
  EXPECT_EQ(cased[1].shape.moe, MoeShape{});
  // Past what a point of its own allows, a swept value is refused at that point.
  const std::string msg = input_error(
      [] { sweep_points(parsed("workload: [mlp, toy_moe]\nexperts: [16, 2]\ntop_k: 3\n")); });
  EXPECT_TRUE(contains(msg, "top_k: 3 is more than the 2 experts")) << msg;
}

TEST(MoeKeysToy, ARecordedKeyRegeneratesItsSpec) {
  CaseSpec spec;
  spec.workload = &kToyMoe;
  spec.shape = Shape{2, 8, 16, 64, 0};
  spec.shape.moe = {16, 4, 96, 1.25, 1.5, 7};
  spec.world = 2;
  spec.strategy = parse_strategy("baseline");
  const CaseKey key = CaseKey::of(spec);
  const CaseSpec again = key.spec();
  EXPECT_EQ(again.workload, &kToyMoe);
  EXPECT_EQ(again.shape.moe, spec.shape.moe);
  EXPECT_EQ(CaseKey::of(again), key);
  // Defaults left out regenerate as the values they resolved to: the same case.
  spec.shape.moe = {};
  const CaseKey defaults = CaseKey::of(spec);
  EXPECT_EQ(defaults.spec().shape.moe, (MoeShape{8, 2, 64, 0, 0, 1}));
  EXPECT_EQ(CaseKey::of(defaults.spec()), defaults);
}

}  // namespace
}  // namespace fob

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  fob::register_workload(fob::kToyMoe);
  return RUN_ALL_TESTS();
}
