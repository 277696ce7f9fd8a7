#!/usr/bin/env bash
# The GPU checks from the bundle: what tests/gpu/run_checks.sh checks, without building. Uses
# only this bundle (never compiles, never calls apt, needs no network) and finishes within
# 8 minutes on one GPU: every step is bounded (the bounds add up to 7.9 minutes at most).
#
#   ./run_checks.sh OUTDIR
#
# Everything it writes stays under OUTDIR (TMPDIR, HOME and the CUDA cache point there): one
# <step>.log per step, the .h5 results and their .md reports, gemm_slices_cuda.json and
# summary.txt, which names the device, the driver, cuBLAS and NCCL found, and every step's status
# and time. A failed step does not stop the later ones; the exit status is 1 if any failed.
# Optional environment: NCCL_DEBUG (default WARN).
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
mkdir -p "$1"
OUTDIR=$(cd "$1" && pwd)
SUMMARY="$OUTDIR/summary.txt"
STEPS="$OUTDIR/.steps"
FOBENCH="$ROOT/bin/fobench"
MPIRUN="$ROOT/bin/mpirun"
SMOKE="$ROOT/configs/smoke.yaml"

# Nothing outside OUTDIR: temporary files, Open MPI's session directory and shared-memory
# files, the CUDA kernel cache, Python's bytecode.
export TMPDIR="$OUTDIR/tmp" HOME="$OUTDIR/home" CUDA_CACHE_PATH="$OUTDIR/cuda-cache"
export OMPI_MCA_btl_vader_backing_directory="$TMPDIR" PYTHONDONTWRITEBYTECODE=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A missing cuBLAS or NCCL is a failure here, not a quiet fallback to the cpu backend.
export FOB_REQUIRE_CUDA=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
mkdir -p "$TMPDIR" "$HOME" "$CUDA_CACHE_PATH"
: >"$STEPS"

MPI_FLAGS=(--oversubscribe --bind-to none)
WORKLOADS=(mlp attn ulysses mlp_bwd gemm_ar ag_gemm_w gemm_rs_grad)
# The paper-sized mlp (b·s = 32768 tokens, d = 4096, F = 16384, bf16 as the paper), every
# overlap strategy, timed only: its double-precision oracle would take an hour on one core;
# correctness is what the gpu tests and the smoke runs check.
MLP_SHAPE=(--batch 8 --seq 4096 --hidden 4096 --ffn 16384 --dtype bf16 -n 20)
MLP_STRATEGIES=baseline,slicing:4,decompose,flash,flash_direct
# Time bounds (seconds): 2*5 (device query) + 10+10+10 + 14*18 + 4*12 + 2*34 + (5+20) + 6*3 +
# 6*3 = 469 with the six results files: 7.9 minutes at most. A gpu test step loads cuBLAS
# (cuBLASLt alone is 0.5 GB) and runs about 50 small cases; the first may read it from disk.
# The paper-sized mlp gave 6 s of its bound to ulysses' two gpu test steps, to stay under 8
# minutes: its GEMMs take about 2 s (100 iterations of 8.8 TFLOP on an H100-class GPU), the
# rest of the bound is start-up, allocation and input generation.
T_QUERY=5 T_SMI=10 T_LIBS=10 T_VERSION=10 T_GPU_TEST=18 T_SMOKE=12 T_MLP=34 T_GEMM=20 T_REPORT=3

failed=0
steps=0
START=$SECONDS

GPUS=0
# --- the summary, written again after every step, so that it is complete if the run is cut --
DEVICES="none found (nvidia-smi missing or failing)"
if command -v nvidia-smi >/dev/null 2>&1; then
  DEVICES=$(timeout -k 5 "$T_QUERY" nvidia-smi \
    --query-gpu=index,name,compute_cap,driver_version,memory.total --format=csv,noheader \
    2>/dev/null) || DEVICES="none found (nvidia-smi failing)"
  GPUS=$(timeout -k 5 "$T_QUERY" nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi

# The bundle's cuda module is built with CUDA 13, whose runtime needs an R580 or newer driver
# (without the cuda-compat forward-compatibility package, which the bundle does not carry).
DRIVER_NOTE=""
driver=$(sed -n '1s/^[^,]*,[^,]*,[^,]*, *\([0-9]*\)\..*/\1/p' <<<"$DEVICES")
if [[ -n "$driver" && "$driver" -lt 580 ]]; then
  DRIVER_NOTE="driver $driver is older than R580, the first for CUDA 13: the cuda backend cannot run here"
fi

# The libraries the launcher found (bin/fob-libs) and what fobench --version says of them.
found_libraries() {
  if [[ -f "$OUTDIR/libraries.log" ]]; then
    grep -E '^  lib(cuda|cublas|cublasLt|cudart|nccl)\.so' "$OUTDIR/libraries.log" || true
  else
    echo "  (not looked for yet)"
  fi
  if [[ -f "$OUTDIR/version.log" ]]; then
    # fobench's own lines (backends, cuda runtime/driver/cuBLAS/NCCL), not the launcher's.
    grep -iE '^(backends|cuda|nccl|cublas|driver)\b' "$OUTDIR/version.log" |
      grep -v 'cannot run' | sed 's/^/  fobench --version: /' || true
  fi
}

write_summary() {
  local result=$1
  {
    echo "fobench GPU checks from the bundle, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
    echo "bundle: $ROOT ($(sed -n 's/^# fobench git //p' "$ROOT/MANIFEST" 2>/dev/null))"
    echo "devices (index, name, compute capability, driver, memory):"
    printf '%s\n' "$DEVICES" | sed 's/^/  /'
    if [[ -n "$DRIVER_NOTE" ]]; then echo "  NOTE: $DRIVER_NOTE"; fi
    echo "libraries found on this machine:"
    found_libraries
    echo
    echo "steps (logs in $OUTDIR/<step>.log; bound = the step's time limit):"
    cat "$STEPS"
    if [[ -f "$OUTDIR/check_results.log" ]]; then
      echo
      echo "results files:"
      grep -E '\.h5: ' "$OUTDIR/check_results.log" | sed 's/^/  /' || echo "  (none checked)"
    fi
    echo
    echo "$result"
  } >"$SUMMARY.new"
  mv "$SUMMARY.new" "$SUMMARY"
}

# record NAME STATUS SECONDS BOUND [NOTE]
record() {
  local status=ok note=${5:-}
  steps=$((steps + 1))
  if [[ $2 -ne 0 ]]; then
    status=FAILED
    failed=$((failed + 1))
    if [[ $2 -eq 124 || $2 -eq 137 ]]; then note="timed out after ${4}s${note:+; $note}"; fi
  fi
  printf '  %-26s %-7s exit %-3s %4ss (bound %3ss)  %s\n' "$1" "$status" "$2" "$3" "$4" \
    "$note" | tee -a "$STEPS"
  write_summary "result: running ($steps steps so far, $((SECONDS - START))s)"
}

# first_reason LOG: the line of a failed step's log most likely to say why.
first_reason() {
  local pattern
  for pattern in 'cannot run' 'error|fail' 'not found|no such|missing'; do
    if grep -m1 -iE "$pattern" "$1"; then return 0; fi
  done
  grep -v '^exit status' "$1" | grep -v '^[$+] ' | tail -n1 || true
}

# step NAME BOUND COMMAND...: COMMAND with its output in OUTDIR/NAME.log, its status recorded.
# A command is bounded by timeout; a shell function bounds its own commands (BOUND each) and
# chains them with && or returns explicitly (set -e does not apply inside a tested command).
step() {
  local name=$1 bound=$2 rc=0 start=$SECONDS
  shift 2
  echo "== $name" >&2
  {
    printf '$'
    printf ' %q' "$@"
    printf '\n'
  } >"$OUTDIR/$name.log"
  if [[ $(type -t "$1") == function ]]; then
    STEP_BOUND=$bound "$@" >>"$OUTDIR/$name.log" 2>&1 </dev/null || rc=$?
  else
    timeout -k 10 "$bound" "$@" >>"$OUTDIR/$name.log" 2>&1 </dev/null || rc=$?
  fi
  echo "exit status: $rc" >>"$OUTDIR/$name.log"
  local note=""
  if [[ $rc -eq 77 ]]; then
    # 77 is "skipped: no usable GPU". With a GPU present that is a failure; show why.
    note="exit 77 (skipped) although nvidia-smi lists $GPUS GPU(s)"
    echo "$name: $note; its output:" >&2
    tail -n 40 "$OUTDIR/$name.log" | sed 's/^/  | /' >&2
  elif [[ $rc -ne 0 ]]; then
    note=$(first_reason "$OUTDIR/$name.log" | cut -c1-100)
  fi
  record "$name" "$rc" $((SECONDS - start)) "$bound" "$note"
}

# mpi NP [mpirun options] -- PROGRAM ARGS...: a bundle program under the bundle's mpirun.
mpi() {
  local np=$1
  shift
  local opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    opts+=("$1")
    shift
  done
  shift
  local cmd=(timeout -k 10 "$STEP_BOUND" "$MPIRUN" -np "$np" "${MPI_FLAGS[@]}" "${opts[@]}" "$@")
  printf '+'
  printf ' %q' "${cmd[@]}"
  printf '\n'
  "${cmd[@]}"
}

# --- 1-3: the device, the libraries, the version ------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
  step nvidia_smi "$T_SMI" sh -c 'nvidia-smi -L && nvidia-smi &&
    nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv'
else
  echo "nvidia-smi: not found on PATH ($PATH)" >"$OUTDIR/nvidia_smi.log"
  record nvidia_smi 1 0 "$T_SMI" "nvidia-smi not found: no NVIDIA driver on this machine?"
fi
step libraries "$T_LIBS" "$ROOT/bin/fob-libs"
step version "$T_VERSION" "$FOBENCH" --version

# --- 4: the gpu tests, per workload: NCCL at 1 rank (with loopback plans), MPI at 2 ranks -----
for w in "${WORKLOADS[@]}"; do
  step "gpu_nccl_np1_$w" "$T_GPU_TEST" mpi 1 -- "$ROOT/bin/fob_gpu_tests" --transport=nccl \
    "--workload=$w"
  step "gpu_mpi_np2_$w" "$T_GPU_TEST" mpi 2 -x CUDA_VISIBLE_DEVICES=0 -- "$ROOT/bin/fob_gpu_tests" \
    --transport=mpi "--workload=$w"
done

# --- 5: fobench on the cuda backend ---------------------------------------------------------
RESULTS=()
smoke() {  # smoke NAME NP TRANSPORT DTYPE [mpirun options]
  local name=$1 np=$2 transport=$3 dtype=$4
  shift 4
  RESULTS+=("$name.h5")
  step "$name" "$T_SMOKE" mpi "$np" "$@" -- "$FOBENCH" run -c "$SMOKE" --backend cuda \
    --transport "$transport" --dtype "$dtype" --verify --force -o "$OUTDIR/$name.h5"
}
smoke smoke_nccl_np1_fp32 1 nccl fp32
smoke smoke_nccl_np1_bf16 1 nccl bf16
smoke smoke_mpi_np2_fp32 2 mpi fp32 -x CUDA_VISIBLE_DEVICES=0
smoke smoke_mpi_np2_bf16 2 mpi bf16 -x CUDA_VISIBLE_DEVICES=0
RESULTS+=(mlp_nccl_np1.h5 mlp_nccl_np1_graphs.h5)
step mlp_nccl_np1 "$T_MLP" mpi 1 -- "$FOBENCH" run -c "$SMOKE" "${MLP_SHAPE[@]}" \
  --strategies "$MLP_STRATEGIES" --backend cuda --transport nccl --no-verify --force \
  -o "$OUTDIR/mlp_nccl_np1.h5"
step mlp_nccl_np1_graphs "$T_MLP" mpi 1 -- "$FOBENCH" run -c "$SMOKE" "${MLP_SHAPE[@]}" \
  --strategies "$MLP_STRATEGIES" --backend cuda --transport nccl --graphs --no-verify --force \
  -o "$OUTDIR/mlp_nccl_np1_graphs.h5"

# --- 6: the cuBLAS slicing micro-benchmark ----------------------------------------------------
gemm_slices() {
  local json="$OUTDIR/gemm_slices_cuda.json" bench="$ROOT/bin/fob_gemm_slices_cuda" min_time=0.05
  [[ -x "$bench" ]] || { echo "no $bench in this bundle"; return 1; }
  # Google Benchmark 1.8 wants a unit ("0.05s"); 1.7 (Debian 12) a plain number of seconds.
  if FOB_REQUIRE_CUDA=0 timeout -k 5 5 "$bench" --help 2>&1 | grep -q '<float>s'; then
    min_time=0.05s
  fi
  CUDA_VISIBLE_DEVICES=0 timeout -k 10 "$STEP_BOUND" "$bench" "--benchmark_min_time=$min_time" \
    "--benchmark_out=$json" --benchmark_out_format=json || return
  # Google Benchmark exits 0 even when a benchmark reported an error: look in the JSON.
  grep -q '"name"' "$json" || { echo "no benchmarks in $json"; return 1; }
  if grep -q '"error_occurred": true' "$json"; then
    echo "some benchmarks reported errors:"
    grep '"error_message"' "$json" | sort | uniq -c
    return 1
  fi
}
step gemm_slices_cuda "$T_GEMM" gemm_slices

# --- 7: a report of every results file, and a check of each ---------------------------------
reports_md() {
  local h5 rc=0
  for h5 in "$OUTDIR"/*.h5; do
    [[ -f "$h5" ]] || continue
    echo "+ fobench report $h5 > ${h5%.h5}.md"
    timeout -k 5 "$T_REPORT" "$FOBENCH" report "$h5" >"${h5%.h5}.md" || rc=1
  done
  return "$rc"
}
# One bound per file: these bounds are per command.
step reports "$((T_REPORT * ${#RESULTS[@]}))" reports_md

check_results() {
  local python
  python=$(command -v python3) || { echo "no python3 to read the JSON reports"; return 1; }
  local f rc=0
  for f in "${RESULTS[@]}"; do
    if [[ ! -f "$OUTDIR/$f" ]]; then
      echo "$f: FAILED (missing: the run did not write it)"
      rc=1
      continue
    fi
    if ! timeout -k 5 "$T_REPORT" "$FOBENCH" report "$OUTDIR/$f" --format json \
      >"$OUTDIR/${f%.h5}.json" 2>"$OUTDIR/${f%.h5}.json.err"; then
      echo "$f: FAILED (fobench report --format json: $(tail -n1 "$OUTDIR/${f%.h5}.json.err"))"
      rc=1
      continue
    fi
    # Verified runs (smoke_*) must have every case verified; the others none failed.
    "$python" - "$OUTDIR/${f%.h5}.json" "$f" <<'PY' || rc=1
import json, math, sys

path, name = sys.argv[1], sys.argv[2]
must_verify = name.startswith("smoke_")
try:
    with open(path) as fh:
        doc = json.load(fh)
    system, cases = doc["system"], doc["cases"]
    problems = []
    if system.get("backend") != "cuda":
        problems.append(f"backend {system.get('backend')!r}, not 'cuda'")
    if not cases:
        problems.append("no cases")
    for c in cases:
        label = c.get("strategy", c.get("case_id", "?"))
        v = c.get("verified")
        if v is False or (must_verify and v is not True):
            problems.append(f"{label}: verified={v}")
        for key in ("t_ms", "t_min_ms", "t_p90_ms"):
            t = c.get(key)
            if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
                problems.append(f"{label}: {key}={t}")
    what = (f"backend {system.get('backend')}, transport {system.get('transport')}, "
            f"world {system.get('world_size')}, {len(cases)} cases")
    if problems:
        print(f"{name}: FAILED ({what}: " + "; ".join(problems[:6]) +
              (f" (+{len(problems) - 6} more)" if len(problems) > 6 else "") + ")")
        sys.exit(1)
    print(f"{name}: ok ({what}, " + ("all verified, " if must_verify else "") + "times finite)")
except (OSError, ValueError, KeyError, TypeError) as e:
    print(f"{name}: FAILED (unreadable report: {type(e).__name__}: {e})")
    sys.exit(1)
PY
  done
  return "$rc"
}
step check_results "$((T_REPORT * ${#RESULTS[@]}))" check_results

if [[ $failed -eq 0 ]]; then
  result="result: all $steps steps passed"
else
  result="result: $failed of $steps steps FAILED"
fi
write_summary "$result"
rm -f "$STEPS"
echo "$result ($((SECONDS - START))s); summary: $SUMMARY"
[[ $failed -eq 0 ]]
