#!/usr/bin/env bash
# The bundle's run_checks.sh on a machine without a GPU: it must run every step, record each
# (all but the report of no files fail), write summary.txt ending in "result: K of N steps
# FAILED", exit non-zero, write nothing outside its OUTDIR, and do it within seconds. With a
# GPU (nvidia-smi working) this test is skipped: run the bundle's run_checks.sh itself there.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
require_bundle
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  # Not a failure under CI=true: this test is about machines without a GPU.
  echo "SKIP: a GPU is present; run $FOB_BUNDLE_DIR/run_checks.sh OUTDIR instead"
  exit 77
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out="$scratch/checks"
before=$(top_entries /tmp /dev/shm | grep -vxF "$scratch" || true)
start=$SECONDS
rc=0
timeout -k 10 120 "$FOB_BUNDLE_DIR/run_checks.sh" "$out" >"$scratch/log" 2>&1 || rc=$?
elapsed=$((SECONDS - start))
[[ $rc == 1 ]] || { cat "$scratch/log" >&2; fail "run_checks.sh exit $rc, expected 1"; }
((elapsed <= 60)) || fail "run_checks.sh took ${elapsed}s without a GPU"
summary="$out/summary.txt"
[[ -f "$summary" ]] || fail "no summary.txt"

# Every step is in the summary, with a status, and the last line counts them.
steps=(nvidia_smi libraries version gemm_slices_cuda reports check_results smoke_nccl_np1_fp32
  smoke_nccl_np1_bf16 smoke_mpi_np2_fp32 smoke_mpi_np2_bf16 mlp_nccl_np1 mlp_nccl_np1_graphs)
for w in mlp attn ulysses mlp_bwd gemm_ar ag_gemm_w gemm_rs_grad; do
  steps+=("gpu_nccl_np1_$w" "gpu_mpi_np2_$w")
done
for s in "${steps[@]}"; do
  grep -qE "^  $s +(ok|FAILED) +exit" "$summary" || fail "step $s not in the summary"
  [[ -f "$out/$s.log" ]] || fail "no $s.log"
done
n=${#steps[@]}
last=$(tail -n1 "$summary")
[[ $last =~ ^result:\ ([0-9]+)\ of\ $n\ steps\ FAILED$ ]] || fail "last line: '$last' ($n steps)"
grep -q 'nvidia_smi .*FAILED.*nvidia-smi not found' "$summary" ||
  fail "the summary does not say nvidia-smi is missing"
grep -q 'libcuda.so.1 *NOT FOUND' "$summary" || fail "the summary does not name the driver"
ok "$last, every step recorded, in ${elapsed}s"

# Nothing outside OUTDIR: its tmp and home hold what was written, /tmp and /dev/shm nothing new.
new=$(new_entries "$before" /tmp /dev/shm | grep -vxF "$scratch" || true)
[[ -z "$new" ]] || fail "new in /tmp or /dev/shm: $new"
ok "nothing written outside OUTDIR"
