// Verification tolerances: how far a checked buffer may lie from what the oracle (oracle.h)
// says it must hold. They belong to verification, not to device selection: the CPU and cuda
// backends are held to the same bounds, and only the dtype, the world and attention's softmax
// decide them.
#pragma once

#include <cstdint>

#include "fob/plan.h"

namespace fob {

// Verification tolerance for a dtype: 0 (bit-exact) for fp32/fp64; for bf16/fp16 a bound on
// |got - want| relative to the largest |want| of the buffer, (world + 2) roundings' worth, as
// each ring step and the final store may round once.
double verify_tolerance(DType dtype, int world);

// Attention's softmax is not integer-exact, so outputs that depend on it (O, its projection and
// the reduce-scatter of that) get a bound relative to the largest |want|:
//   16 * sqrt(seq + hidden) * u_acc  +  (world + 6) * u_store
// u_acc is the accumulation's unit roundoff (2^-24; 2^-53 for fp64): the scores, softmax and
// the two GEMMs after it sum seq + hidden terms whose errors add up like a random walk.
// u_store (2^-8 bf16, 2^-11 fp16, 0 otherwise) counts the roundings of P, O, each ring step
// and the final store.
double attention_tolerance(DType dtype, int world, int64_t seq, int64_t hidden);

// What streaming the softmax over `blocks` blocks of keys adds (TaskKind::online_softmax):
//   6 * blocks * (u_acc + u_store)
// Each block after the first rescales the running output O and sum l by exp(old max - new max):
// the exp and the product round once each, and adding the block's P V into O and its sum into
// l once more; the maximum's own rounding scales O and l alike and cancels in O / l. So O and l
// each carry at most 3 roundings per block, their quotient 6, each at most u_acc + u_store (the
// state and O are held in the plan's dtype; u_store is 0 for fp32 and fp64).
double streamed_attention_tolerance(DType dtype, int64_t blocks);

// How far a checked buffer may lie from the oracle: `bound` relative to max|want|, or to
// max(1, max|want|) unless `own_scale` (values far below 1, such as attention's averages).
struct Tolerance {
  double bound = 0;
  bool own_scale = false;
};

// What the fast math mode (--math fast) adds to a bound, relative as the bound is:
//   4 * u_fast
// u_fast is the unit roundoff of what the GEMMs round to there: 2^-11 for fp32 (TF32 keeps 10
// of the mantissa's 23 bits), the store's 2^-8 (bf16) and 2^-11 (fp16), 0 for fp64 (no TF32,
// no reduced precision). Each product's two operands round once each to TF32, and a
// reduced-precision split-K reduction rounds each partial result and their sum once more.
// cuBLAS documents neither its split count nor its reduction order; the bound holds for a
// reduction of two partial results, the case the cuda model computes (tests/cuda_model).
double fast_math_tolerance(DType dtype);

// The bound for one check of a plan: its workload's (WorkloadDef::tolerance), or
// verify_tolerance for the dtype and world relative to max(1, max|want|); plus
// fast_math_tolerance() where the GEMMs ran in the fast math mode.
Tolerance check_tolerance(const Plan& plan, CheckKind kind, bool fast_math = false);

}  // namespace fob
