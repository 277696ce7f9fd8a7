#!/usr/bin/env bash
# The GPU checks: one script to run on a machine with one or more NVIDIA GPUs (about 10 minutes
# on one GPU). It builds the suite with the cuda backend, runs the gpu-labelled tests, fobench
# on the cuda backend over MPI and over NCCL, and the cuBLAS slicing micro-benchmark, then
# checks every results file it wrote.
#
#   tests/gpu/run_checks.sh OUTDIR
#
# Everything goes under OUTDIR (created): one <step>.log per step, the .h5 results, their .md
# reports, the benchmark JSON, the build (OUTDIR/build) and summary.txt, which names the
# devices and gives every step's exit status. A failed step does not stop the later ones; the
# script exits non-zero if any step failed.
#
# Environment (all optional): CMAKE_CUDA_ARCHITECTURES or CUDAARCHS (default: native, the GPUs
# present), FOB_CMAKE_ARGS (more cmake arguments, space-separated), FOB_SKIP_DEPS=1 (skip
# scripts/deps.sh), MPIRUN (default mpirun), NCCL_DEBUG (default WARN),
# OMPI_MCA_btl_vader_single_copy_mechanism (default none: sandboxes refuse process_vm_readv).
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$1"
OUTDIR=$(cd "$1" && pwd)
BUILD="$OUTDIR/build"
FOBENCH="$BUILD/fobench"
SMOKE="$REPO/bench_configs/smoke.yaml"
SUMMARY="$OUTDIR/summary.txt"
MPIRUN=${MPIRUN:-mpirun}
MPI_TIMEOUT=300

MPI_FLAGS=(--oversubscribe --bind-to none)
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  MPI_FLAGS+=(--allow-run-as-root)
fi
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# Sandboxes (gVisor, containers without CAP_SYS_PTRACE) refuse process_vm_readv, Open MPI's
# single copy between ranks: the 2- and 4-rank runs would fail. These runs check, not time it.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# NVIDIA's container runtime mounts the driver here, often on no search path.
for dir in /usr/local/nvidia/lib /usr/local/nvidia/lib64; do
  if [[ -e "$dir/libcuda.so.1" ]]; then
    export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done

# The paper-like mlp (b·s = 32768 tokens, d = 4096, F = 16384), every overlap strategy. Its
# double-precision reference would take about an hour on one core (5·10¹² multiply-adds), so
# these runs time only; correctness is checked at the small shapes above them.
DEMO_SHAPE=(--batch 8 --seq 4096 --hidden 4096 --ffn 16384 -n 20 --no-verify)
DEMO_STRATEGIES=baseline,slicing:4,decompose,flash,flash_direct

failed=0
steps=0
EXPECTED_H5=()
UNVERIFIED_H5=()  # results of --no-verify runs: their cases are timed, not checked

# --- summary header: where, what, which devices ---------------------------------------------
GPUS=0
commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git -C "$REPO" status --porcelain 2>/dev/null || true)" ]]; then
  commit+=", with local changes"
fi
{
  echo "fobench GPU checks, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(hostname)"
  echo "repo: $REPO (git $commit)"
  echo "devices:"
  if command -v nvidia-smi >/dev/null 2>&1 &&
    devices=$(nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total \
      --format=csv,noheader 2>&1); then
    while IFS= read -r line; do echo "  $line"; done <<<"$devices"
  else
    echo "  none found (nvidia-smi missing or failing)"
  fi
} >"$SUMMARY"
if command -v nvidia-smi >/dev/null 2>&1; then
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
{
  echo "GPUs: $GPUS"
  echo
  echo "steps (logs in $OUTDIR/<step>.log):"
} >>"$SUMMARY"
cat "$SUMMARY"

# record NAME STATUS SECONDS [NOTE]
record() {
  local status=ok
  steps=$((steps + 1))
  if [[ $2 -ne 0 ]]; then
    status=FAILED
    failed=$((failed + 1))
  fi
  printf '  %-22s %-7s exit %-3s %5ss  %s\n' "$1" "$status" "$2" "$3" "${4:-}" | tee -a "$SUMMARY"
}

# step NAME COMMAND...: runs COMMAND with its output in OUTDIR/NAME.log and records its status.
# Steps that are shell functions chain their commands with && or return explicitly: set -e
# does not apply inside a command whose status is tested.
step() {
  local name=$1 rc=0 start=$SECONDS
  shift
  echo "== $name" >&2
  {
    printf '$'
    printf ' %q' "$@"
    printf '\n'
  } >"$OUTDIR/$name.log"
  "$@" >>"$OUTDIR/$name.log" 2>&1 </dev/null || rc=$?
  echo "exit status: $rc" >>"$OUTDIR/$name.log"
  record "$name" "$rc" $((SECONDS - start))
}

# skip NAME WHY: a step that could not run, counted as failed.
skip() {
  echo "$2" >"$OUTDIR/$1.log"
  record "$1" 1 0 "not run: $2"
}

# fob_mpirun NP [mpirun options] -- FOBENCH ARGS...: fobench under mpirun, bounded in time.
fob_mpirun() {
  local np=$1
  shift
  local opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    opts+=("$1")
    shift
  done
  shift
  local cmd=(timeout -k 10 "$MPI_TIMEOUT" "$MPIRUN" -np "$np" "${MPI_FLAGS[@]}" "${opts[@]}"
    "$FOBENCH" "$@")
  printf '+'
  printf ' %q' "${cmd[@]}"
  printf '\n'
  "${cmd[@]}"
}

# --- (a) the GPUs ----------------------------------------------------------------------------
show_gpus() {
  nvidia-smi -L && nvidia-smi
}
step nvidia_smi show_gpus

# --- (b) dependencies, configure, build ------------------------------------------------------
if [[ -f "$REPO/scripts/deps.sh" ]]; then
  step deps bash "$REPO/scripts/deps.sh"
fi

configure() {
  local archs=${CMAKE_CUDA_ARCHITECTURES:-${CUDAARCHS:-}}
  local generator=() extra=()
  if [[ -z "$archs" ]]; then
    # "native" needs CMake 3.24; before that, the compute capabilities nvidia-smi reports.
    local version
    version=$(cmake --version | awk 'NR == 1 { print $3 }') || return
    if printf '%s\n' 3.24 "$version" | sort -V -C; then
      archs=native
    else
      archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d . | sort -u |
        paste -sd';') || return
    fi
  fi
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  if [[ -n "${FOB_CMAKE_ARGS:-}" ]]; then read -r -a extra <<<"$FOB_CMAKE_ARGS"; fi
  cmake -S "$REPO" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFOB_CUDA=ON \
    "-DCMAKE_CUDA_ARCHITECTURES=$archs" "${extra[@]}"
}
step configure configure
step build cmake --build "$BUILD" -j

if [[ ! -x "$FOBENCH" ]]; then
  skip version "no $FOBENCH (the build failed)"
  skip ctest_gpu "no build"
  skip fobench_runs "no $FOBENCH (the build failed)"
else
  step version "$FOBENCH" --version

  # --- (c) the gpu-labelled tests --------------------------------------------------------------
  # On a machine whose nvidia-smi lists a GPU, a gpu test that reports "skipped" is a failure.
  ctest_gpu() {
    local log="$OUTDIR/ctest_gpu.out" rc=0
    timeout -k 10 600 ctest --test-dir "$BUILD" -L gpu --output-on-failure --no-tests=error \
      >"$log" 2>&1 || rc=$?
    cat "$log"
    if [[ $GPUS -ge 1 ]] && grep -Eq 'Not Run|\*\*\*Skipped' "$log"; then
      echo "a GPU is present but some gpu tests were skipped"
      return 1
    fi
    return "$rc"
  }
  step ctest_gpu ctest_gpu

  # --- (d) MPI transport, 2 and 4 ranks sharing GPU 0 -------------------------------------------
  for np in 2 4; do
    EXPECTED_H5+=("mpi_np$np.h5")
    step "mpi_np$np" fob_mpirun "$np" -x CUDA_VISIBLE_DEVICES=0 -- run -c "$SMOKE" \
      --backend cuda --transport mpi --dtype fp32 --force -o "$OUTDIR/mpi_np$np.h5"
  done
  EXPECTED_H5+=(mpi_np2_bf16.h5)
  step mpi_np2_bf16 fob_mpirun 2 -x CUDA_VISIBLE_DEVICES=0 -- run -c "$SMOKE" \
    --backend cuda --transport mpi --dtype bf16 --force -o "$OUTDIR/mpi_np2_bf16.h5"

  # --- (e) NCCL transport, one rank per GPU ----------------------------------------------------
  if [[ $GPUS -ge 2 ]]; then
    EXPECTED_H5+=("nccl_np${GPUS}_smoke.h5")
    step "nccl_np${GPUS}_smoke" fob_mpirun "$GPUS" -x NCCL_DEBUG -- run -c "$SMOKE" \
      --backend cuda --transport nccl --force -o "$OUTDIR/nccl_np${GPUS}_smoke.h5"
  fi
  if [[ $GPUS -ge 1 ]]; then
    # The demo-sized mlp must divide by the world size: otherwise the largest power of two
    # below the GPU count. With one GPU there is nothing to overlap, but it exercises the NCCL
    # path and the cuBLAS timings on the paper-like shape.
    np=$GPUS
    if ((32768 % np != 0 || 16384 % np != 0)); then
      np=1
      while ((np * 2 <= GPUS)); do np=$((np * 2)); done
    fi
    EXPECTED_H5+=("nccl_np$np.h5" nccl_graphs.h5)
    UNVERIFIED_H5+=("nccl_np$np.h5" nccl_graphs.h5)
    step "nccl_np$np" fob_mpirun "$np" -x NCCL_DEBUG -- run -c "$SMOKE" "${DEMO_SHAPE[@]}" \
      --strategies "$DEMO_STRATEGIES" --backend cuda --transport nccl --force \
      -o "$OUTDIR/nccl_np$np.h5"
    step nccl_graphs fob_mpirun "$np" -x NCCL_DEBUG -- run -c "$SMOKE" "${DEMO_SHAPE[@]}" \
      --strategies "$DEMO_STRATEGIES" --backend cuda --transport nccl --graphs --force \
      -o "$OUTDIR/nccl_graphs.h5"
  else
    skip nccl "no GPU found by nvidia-smi"
  fi
fi

# --- (f) the cuBLAS slicing curve ------------------------------------------------------------
gemm_slices() {
  local json="$OUTDIR/gemm_slices_cuda.json"
  CUDA_VISIBLE_DEVICES=0 timeout -k 10 "$MPI_TIMEOUT" "$BUILD/bench/fob_gemm_slices_cuda" \
    "--benchmark_out=$json" --benchmark_out_format=json || return
  # Google Benchmark exits 0 even when a benchmark reported an error: look in the JSON.
  if grep -q '"error_occurred": true' "$json"; then
    echo "some benchmarks reported errors:"
    grep '"error_message"' "$json" | sort | uniq -c
    return 1
  fi
}
if [[ -x "$BUILD/bench/fob_gemm_slices_cuda" ]]; then
  step gemm_slices_cuda gemm_slices
else
  skip gemm_slices_cuda "no $BUILD/bench/fob_gemm_slices_cuda (the build failed)"
fi

# --- (g) a report of every results file ------------------------------------------------------
report_md() {
  "$FOBENCH" report "$1" >"$2"
}
shopt -s nullglob
for h5 in "$OUTDIR"/*.h5; do
  name=$(basename "$h5" .h5)
  if [[ -x "$FOBENCH" ]]; then
    step "report_$name" report_md "$h5" "$OUTDIR/$name.md"
  fi
done

# --- (h) every results file: backend cuda, every case verified, finite task times ------------
PYTHON=""
for candidate in /usr/bin/python3 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import h5py' 2>/dev/null; then
    PYTHON=$candidate
    break
  fi
done

check_h5() {
  local files=()
  local f
  for f in "${EXPECTED_H5[@]}" "$OUTDIR"/*.h5; do
    f=$(basename "$f")
    if [[ " ${files[*]} " != *" $f "* ]]; then files+=("$f"); fi
  done
  if [[ ${#files[@]} -eq 0 ]]; then
    echo "no results files"
    return 1
  fi
  (cd "$OUTDIR" && FOB_UNVERIFIED="${UNVERIFIED_H5[*]}" "$PYTHON" - "${files[@]}") <<'PY'
import math
import os
import sys

import h5py
import numpy as np


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def check(path):
    if not os.path.exists(path):
        partial = " (a .partial is left: the run did not finish)" if os.path.exists(
            path + ".partial") else ""
        return False, "missing" + partial
    with h5py.File(path, "r") as f:
        system = f["system"].attrs
        backend = text(system.get("backend", "?"))
        transport = text(system.get("transport", "?"))
        world = int(system.get("world_size", 0))
        problems = []
        if backend != "cuda":
            problems.append(f"backend {backend!r}, not 'cuda'")
        cases = f["cases"] if "cases" in f else {}
        if len(cases) == 0:
            problems.append("no cases")
        dtypes = set()
        for cid in cases:
            g = cases[cid]
            a = g.attrs
            strategy = text(a.get("strategy", cid))
            dtypes.add(text(a.get("dtype", "?")))
            verified = int(a.get("verified", 0))
            timed_only = path in os.environ.get("FOB_UNVERIFIED", "").split()
            if verified != 1 and not (timed_only and verified == -1):
                problems.append(f"{strategy}: verified={a.get('verified')} "
                                f"max_abs_err={a.get('max_abs_err')}")
            real = g["tasks"][...]["task"] >= 0
            for name in ("task_start", "task_end"):
                times = g[name][...]
                bad = int((~np.isfinite(times[:, real])).sum())
                if bad:
                    problems.append(f"{strategy}: {bad} non-finite {name} values of real tasks")
        what = (f"backend {backend}, transport {transport}, world {world}, "
                f"dtype {','.join(sorted(dtypes))}, {len(cases)} cases")
        if problems:
            return False, what + ": " + "; ".join(problems[:6]) + (
                f" (+{len(problems) - 6} more)" if len(problems) > 6 else "")
        return True, what + ", all verified, task times finite"


failed = 0
for path in sys.argv[1:]:
    try:
        ok, msg = check(path)
    except Exception as e:  # an unreadable or malformed file is a failure, not a crash
        ok, msg = False, f"unreadable: {type(e).__name__}: {e}"
    failed += not ok
    print(f"{path}: {'ok' if ok else 'FAILED'} ({msg})")
sys.exit(1 if failed else 0)
PY
}
if [[ -n "$PYTHON" ]]; then
  step check_h5 check_h5
else
  skip check_h5 "no python3 with h5py (apt-get install python3-h5py, or pip install h5py)"
fi

{
  echo
  echo "results files:"
  grep -E '\.h5: ' "$OUTDIR/check_h5.log" | sed 's/^/  /' || echo "  (none checked)"
  echo
  if [[ $failed -eq 0 ]]; then
    echo "result: all $steps steps passed"
  else
    echo "result: $failed of $steps steps FAILED"
  fi
} >>"$SUMMARY"
sed -n '/^results files:/,$p' "$SUMMARY"
echo "summary: $SUMMARY"
[[ $failed -eq 0 ]]
