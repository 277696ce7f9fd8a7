#!/usr/bin/env bash
# What every strategy gets alike (docs/fairness.md), proved on the cuda model, which
# implements what the fixes rest on as NVIDIA documents it and logs every op it runs:
#  1. ag_gemm at 2 ranks over NCCL, every NCCL buffer required registered
#     (FOB_MODEL_NCCL_REQUIRE_REGISTERED): fairness_check.py reads the op log — references on
#     NCCL's own CTA limit and overlapping transfers capped, every buffer registered, the same
#     bytes per all-gather for comm_only, baseline, slicing and flash, no copy in slicing, no
#     task before its iteration's last launch, timed GEMMs on other data than verified ones,
#     SM targets only beside transfers — and the file's hardware facts;
#  2. --math fast: TF32 GEMMs, verified, the mode named in the file; in bf16 the reduced-
#     precision split-K reductions, verified within their bound;
#  3. a GPU NVML reports throttled: the rows say so;
#  4. GPUs that do not reach each other over NVLink (a PCIe node; ranks that each see one GPU):
#     the report names it, and NVML's NVLink where the ranks could not see it.
# shellcheck source=../../common/common.sh disable=SC2154 # common.sh sets scratch
source "$FOB_SOURCE_DIR/tests/common/common.sh"
: "${FOB_CUDA_MODULE:?FOB_CUDA_MODULE must name the cuda module of the model}"
export FOB_CUDA_MODULE FOB_MODEL_FATAL=1
shape=(--workload ag_gemm --batch 2 --seq 32 --hidden 64 --ffn 128 --rounds 1 -n 3 -w 1
  --backend cuda --comm-sms 16)

run() { # run NAME ARGS...: fobench run under mpirun at 2 ranks, its file NAME.h5
  local name=$1
  shift
  timeout 300 "$MPIEXEC" -np 2 --oversubscribe --bind-to none -x FOB_CUDA_MODULE \
    -x FOB_MODEL_FATAL -x FOB_MODEL_OP_LOG -x FOB_MODEL_NCCL_REQUIRE_REGISTERED \
    -x FOB_MODEL_GPU_THROTTLE -x FOB_MODEL_TOPOLOGY -x CUDA_VISIBLE_DEVICES \
    "$FOBENCH" run "${shape[@]}" "$@" -o "$scratch/$name.h5" >"$scratch/$name.out" \
    2>"$scratch/$name.err" || { cat "$scratch/$name.err" >&2; fail "$name: fobench run failed"; }
}

# --- 1. the op log and the file ---------------------------------------------------------------
mkdir "$scratch/ops"
FOB_MODEL_OP_LOG="$scratch/ops/ops.%p.log" FOB_MODEL_NCCL_REQUIRE_REGISTERED=1 \
  run fair --strategies baseline,slicing:2,flash
"$FOBENCH" report "$scratch/fair.h5" --hardware --format csv >"$scratch/hardware.csv" ||
  fail "report --hardware failed"
"$FOB_PYTHON" "$FOB_SOURCE_DIR/tests/cuda_model/module/fairness_check.py" "$scratch/ops" \
  "$scratch/hardware.csv" 132 16 || { head -n 30 "$scratch/hardware.csv" >&2; exit 1; }

# --- 2. the fast math mode --------------------------------------------------------------------
mkdir "$scratch/fast"
FOB_MODEL_OP_LOG="$scratch/fast/ops.%p.log" run fast --strategies flash --math fast
grep -q 'compute=32F_FAST_TF32' "$scratch"/fast/ops.*.log || fail "--math fast ran no TF32 GEMM"
! grep -q 'compute=32F ' "$scratch"/fast/ops.*.log || fail "--math fast ran an fp32 GEMM in fp32"
"$FOBENCH" report "$scratch/fast.h5" --hardware --format csv >"$scratch/fast.csv"
grep -q ',math,fast$' "$scratch/fast.csv" || fail "the file does not name the fast math mode"
mkdir "$scratch/fast16"
FOB_MODEL_OP_LOG="$scratch/fast16/ops.%p.log" run fast16 --strategies flash --math fast \
  --dtype bf16
grep -q 'reduced_precision_reduction=1' "$scratch"/fast16/ops.*.log ||
  fail "--math fast in bf16 ran no reduced-precision split-K reduction"
echo "ok: --math fast: TF32 and reduced-precision split-K reductions, verified, named in the file"

# --- 3. a throttled GPU -----------------------------------------------------------------------
FOB_MODEL_GPU_THROTTLE=sw_power_cap run throttled --strategies flash
"$FOBENCH" report "$scratch/throttled.h5" >"$scratch/throttled.md"
grep -q 'GPU throttled: rank 0 sw_power_cap' "$scratch/throttled.md" ||
  { cat "$scratch/throttled.md" >&2; fail "a throttled GPU is not in the rows' doubts"; }
echo "ok: a GPU NVML reports throttled is named in every row it timed"

# --- 4. no NVLink between the node's GPUs -----------------------------------------------------
FOB_MODEL_TOPOLOGY=pcie run pcie --strategies flash
"$FOBENCH" report "$scratch/pcie.h5" >"$scratch/pcie.md"
grep -q 'NVLink:\*\* GPUs sharing a node did not reach each other over NVLink.*PHB' \
  "$scratch/pcie.md" || { cat "$scratch/pcie.md" >&2; fail "the report does not name PCIe"; }
! grep -q 'nccl#1066' "$scratch/pcie.md" || fail "a PCIe node blamed on visibility"
FOB_MODEL_TOPOLOGY=isolated run isolated --strategies flash
"$FOBENCH" report "$scratch/isolated.h5" >"$scratch/isolated.md"
grep -q 'NVML reports NVLink between them.*nccl#1066' "$scratch/isolated.md" ||
  { cat "$scratch/isolated.md" >&2; fail "ranks that did not see each other's GPUs not named"; }
"$FOBENCH" report "$scratch/fair.h5" >"$scratch/fair.md"
! grep -q 'NVLink:' "$scratch/fair.md" || fail "a run over NVLink was named"
echo "ok: the report names a run whose GPUs did not reach each other over NVLink"
