#!/usr/bin/env bash
# The bundle's run_checks.sh on the cuda model (tests/cuda_model): the bundle's programs with
# FOB_CUDA_MODULE naming the model's module and the model's libraries first on LD_LIBRARY_PATH,
# as a GPU machine's would be. It must recognise the model from what fobench reports, run every
# correctness step and pass it (exit 0), record the steps whose meaning is a GPU's (nvidia-smi,
# the paper-sized mlp timings, the cuBLAS slicing curve) as "n/a ... not applicable on the
# model", never ok nor failed, and name the model as the device, in the summary and in every
# results file's check.
#
# The gpu tests run for mlp and attn only (FOB_CHECKS_WORKLOADS): a GEMM workload and an
# attention one (at --small) take a minute on two cores; all seven take four or more, and each is
# a cuda_model_gpu_* test of its own already. What this test proves is the script on the model.
#
#   run_checks_model.sh MODULE LIBDIR   (ctest: cuda_model_bundle_run_checks)
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
require_bundle
[[ $# -eq 2 && -f "$1" && -d "$2" ]] || fail "usage: $0 MODULE LIBDIR (the model's)"
module=$1 libdir=$2
workloads="mlp attn"
gpu_only="nvidia_smi mlp_nccl_np1 mlp_nccl_np1_graphs gemm_slices_cuda"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out="$scratch/out"
start=$SECONDS
rc=0
env FOB_CUDA_MODULE="$module" LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  FOB_CHECKS_WORKLOADS="$workloads" FOB_CHECKS_BUDGET=420 \
  timeout -k 10 440 "$FOB_BUNDLE_DIR/run_checks.sh" "$out" >"$scratch/log" 2>&1 || rc=$?
elapsed=$((SECONDS - start))
summary="$out/summary.txt"
[[ -f "$summary" ]] || { cat "$scratch/log" >&2; fail "no summary.txt (exit $rc)"; }
[[ $rc == 0 ]] || fail "run_checks.sh exit $rc on the model:"$'\n'"$(cat "$summary")"
tar -xzf "$out/checks.tgz" -C "$scratch" || fail "checks.tgz does not unpack"

# Every step of the chosen workloads: the GPU-only ones n/a, the rest ok, each with its log.
n=0 na=0
while IFS= read -r s; do
  if [[ $s =~ ^gpu_(nccl_np1|mpi_np2)_(.*)$ && " $workloads " != *" ${BASH_REMATCH[2]} "* ]]; then
    continue
  fi
  n=$((n + 1))
  if [[ " $gpu_only " == *" $s "* ]]; then
    na=$((na + 1))
    grep -qE "^  $s +n/a +exit - .*not applicable on the model" "$summary" ||
      fail "step $s is not recorded as not applicable on the model:"$'\n'"$(cat "$summary")"
  else
    grep -qE "^  $s +ok +exit 0 " "$summary" ||
      fail "correctness step $s is not recorded ok:"$'\n'"$(cat "$summary")"
  fi
  [[ -f "$scratch/checks/$s.log" ]] || fail "no $s.log in checks.tgz"
done < <(checks_steps)
[[ $(grep -cE '^  [a-z0-9_]+ +(ok|FAILED|skipped|n/a) +exit ' "$summary") == "$n" ]] ||
  fail "the summary records other steps than the $n expected:"$'\n'"$(cat "$summary")"
ok "$((n - na)) correctness steps ok, $na not applicable on the model"

grep -qxF "device: cuda model (CPU), the cuda model: CPU threads, not a GPU (FOB_CUDA_MODULE=$module)" \
  "$summary" || fail "the summary does not name the model as the device:"$'\n'"$(cat "$summary")"
# Every other workload of fobench's table but those part of another (ag_gemm, gemm_rs).
left_out=$(sed -n 's/^gpu tests left out (FOB_CHECKS_WORKLOADS=mlp attn)://p' "$summary")
for w in $(bundle_workloads); do
  [[ $w == mlp || $w == attn || " $left_out " == *" $w "* ]] ||
    fail "the summary does not name the gpu tests left out ($w)"
done
for f in smoke_nccl_np1_fp32 smoke_nccl_np1_bf16 smoke_mpi_np2_fp32 smoke_mpi_np2_bf16; do
  grep -qE "^  $f\\.h5: ok \\(backend cuda, .*devices cuda model \\(CPU\\).*all verified" \
    "$summary" || fail "$f.h5 is not checked as the model's, verified:"$'\n'"$(cat "$summary")"
done
grep -q -- '--small' "$scratch/checks/gpu_nccl_np1_attn.log" ||
  fail "the attention gpu test did not run at --small on the model"
last=$(tail -n1 "$summary")
want="result: all $((n - na)) correctness steps passed on the cuda model (CPU), $na not applicable on the model"
[[ $last == "$want" ]] || fail "last line: '$last', expected '$want'"
ok "$last (${elapsed}s); the summary:"
sed 's/^/  | /' "$summary"
