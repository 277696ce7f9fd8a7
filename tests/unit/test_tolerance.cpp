// The verification bounds: bit-exact where integer inputs allow it, a stated bound for the
// half types and for what passes through attention's softmax.
#include <gtest/gtest.h>

#include <cmath>

#include "fob/tolerance.h"
#include "fob/workload.h"

namespace fob {
namespace {

TEST(VerifyTolerance, ExactForFp32AndFp64BoundedForHalfTypes) {
  EXPECT_EQ(verify_tolerance(DType::fp32, 8), 0.0);
  EXPECT_EQ(verify_tolerance(DType::fp64, 8), 0.0);
  EXPECT_DOUBLE_EQ(verify_tolerance(DType::bf16, 2), 4.0 / 256);
  EXPECT_DOUBLE_EQ(verify_tolerance(DType::fp16, 6), 8.0 / 2048);
  EXPECT_GT(verify_tolerance(DType::bf16, 8), verify_tolerance(DType::bf16, 2));
}

TEST(VerifyTolerance, AttentionBoundsOnlyWhatPassesThroughTheSoftmax) {
  // fp32: 16 * sqrt(seq + hidden) roundings of 2^-24; no storage term.
  EXPECT_DOUBLE_EQ(attention_tolerance(DType::fp32, 4, 1024, 3072), 16 * 64 * std::ldexp(1.0, -24));
  EXPECT_LT(attention_tolerance(DType::fp64, 4, 1024, 3072),
            attention_tolerance(DType::fp32, 4, 1024, 3072));
  EXPECT_GT(attention_tolerance(DType::bf16, 4, 1024, 3072), 10 * std::ldexp(1.0, -8));
  CaseSpec spec;
  spec.workload = find_workload("attn");
  spec.shape = Shape{2, 8, 16, 64, 4};
  spec.world = 2;
  spec.strategy = parse_strategy("flash_qs");
  const Plan plan = make_plan(spec, 0);
  for (const OutputCheck& check : plan.checks) {
    const bool softmax = check.kind != CheckKind::ag_out;
    const Tolerance t = check_tolerance(plan, check.kind);
    EXPECT_EQ(t.bound > 0, softmax) << to_string(check.kind);
    EXPECT_EQ(t.own_scale, softmax) << to_string(check.kind);
  }
  // The same checks of a softmax-free workload stay bit-exact.
  spec.workload = find_workload("mlp");
  spec.strategy = parse_strategy("flash");
  const Plan mlp = make_plan(spec, 0);
  for (const OutputCheck& check : mlp.checks) {
    EXPECT_EQ(check_tolerance(mlp, check.kind).bound, 0.0) << to_string(check.kind);
  }
}

}  // namespace
}  // namespace fob
