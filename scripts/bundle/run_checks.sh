#!/usr/bin/env bash
# The GPU checks from the bundle: what tests/gpu/run_checks.sh checks, without building. Uses
# only this bundle (never compiles, never calls apt, needs no network) and ends within
# FOB_CHECKS_BUDGET seconds (default 460), kill grace included: every step is bounded by what is
# left of that budget, and a step it no longer fits is recorded as not run.
#
#   ./run_checks.sh OUTDIR
#
# It leaves two files in OUTDIR: checks.tgz, everything it wrote (checks/<step>.log for every
# step, the .h5 results with their .md and .json reports, gemm_slices_cuda.json, summary.txt),
# and summary.txt beside it: the devices, the driver and libraries found, why no GPU can be used
# when none can (said once), every step's status and time, and the result. Both are written
# whole (a temporary file renamed over the name, so a link left there is replaced, never
# followed); the work happens in a fresh private directory in OUTDIR, removed at the end. A
# failed step does not stop the later ones. SIGTERM or SIGINT (an outer timeout) stops the step
# running, and the archive and summary are still written.
#
# Exit status: 0 every step passed; 1 a step failed; 77 no usable GPU here (no driver, the
# toolkit's stub, no device) and nothing else failed: the GPU steps are recorded as skipped.
#
# On the cuda model (tests/cuda_model: FOB_CUDA_MODULE names the model's module, its libraries
# on LD_LIBRARY_PATH), which it recognises by what fobench reports (the CUDA runtime that
# fobench --version names carries the model's mark, fobmodel_identity, and every results file's
# device is "cuda model (CPU)"), the correctness steps run as on a GPU, with longer bounds and
# the attention gpu tests at their --small shape; the steps whose meaning is a GPU's (nvidia-smi,
# the paper-sized mlp timings, the cuBLAS slicing curve) are recorded "n/a", not applicable on
# the model: neither passed nor failed. Exit status 0 when every correctness step passed.
#
# Environment (all optional): FOB_CHECKS_BUDGET (seconds, at least 60); NCCL_DEBUG (default
# WARN); OMPI_MCA_btl_vader_single_copy_mechanism (default none: Open MPI's single copy,
# process_vm_readv, fails in sandboxes such as gVisor); NCCL_CUMEM_ENABLE (default NCCL's own;
# unset, the first NCCL step that fails is tried again with 0, and when that passes the later
# ones run with 0: sandboxes may refuse NCCL's cuMem allocations); FOB_CHECKS_WORKLOADS (the
# workloads whose gpu tests run, space-separated, default all; the summary names those left out).
# shellcheck disable=SC2317 # the step functions run through --step, on_signal from a trap
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
ROOT=$(cd "$(dirname "$SELF")" && pwd)
FOBENCH="$ROOT/bin/fobench"
MPIRUN="$ROOT/bin/mpirun"
SMOKE="$ROOT/configs/smoke.yaml"
MPI_FLAGS=(--oversubscribe --bind-to none)
# The paper-sized mlp (b·s = 32768 tokens, d = 4096, F = 16384, bf16 as the paper), every
# overlap strategy, timed only: its double-precision oracle would take an hour on one core;
# correctness is what the gpu tests and the smoke runs check.
MLP_SHAPE=(--batch 8 --seq 4096 --hidden 4096 --ffn 16384 --dtype bf16 -n 20)
MLP_STRATEGIES=baseline,slicing:4,decompose,flash,flash_direct

# Bounds (seconds) of one step each. They need not add up to the budget: the budget bounds the
# whole run, and the steps are ordered so that what it cuts first is the repetitive part (the
# gpu tests of the workloads after mlp). A gpu test step loads cuBLAS (cuBLASLt alone is 0.5 GB,
# read from disk the first time) and runs about 50 small cases. The paper-sized mlp: its GEMMs
# take about 2 s (100 iterations of 8.8 TFLOP on an H100-class GPU); the rest of its bound is
# start-up, cuBLAS and NCCL initialisation, 1.5 GB of allocations and input generation.
T_SMI=10 T_LIBS=10 T_VERSION=20 T_GPU_TEST=30 T_SMOKE=25 T_MLP=60 T_GEMM=40 T_REPORT=5
GRACE=5     # timeout -k: KILL this long after the TERM at a step's bound
RESERVE=30  # of the budget, kept for the reports, the results check and the archive
MIN_STEP=5  # a step with less left than this is not started
# On the cuda model the device is CPU threads, with every access checked: a gpu test of mlp takes
# about 8 s there (2 cores), of attn at --small about 30 s; a smoke run 2 s.
MODEL_T_GPU_TEST=150 MODEL_T_SMOKE=60
MODEL_DEVICE="cuda model (CPU)"  # the device name the model reports (tests/cuda_model)
MAX_ARCHIVE=$((15 * 1024 * 1024))  # checks.tgz stays under 16 MiB: the .h5 files go first

# The steps run in this script under a step's timeout (--step FUNCTION ARGS), and the
# summary's readings of their outputs.
# shellcheck source-path=SCRIPTDIR source=run_checks_steps.sh
source "$ROOT/run_checks_steps.sh"

if [[ ${1:-} == --step ]]; then
  : "${CHECKS:?--step runs inside run_checks.sh only}"
  shift
  "$@"
  exit
fi

# --- the run ----------------------------------------------------------------------------------

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
BUDGET=${FOB_CHECKS_BUDGET:-460}
if ! [[ $BUDGET =~ ^[0-9]+$ ]] || ((BUDGET < 60)); then
  echo "run_checks: FOB_CHECKS_BUDGET=$BUDGET: a number of seconds, at least 60" >&2
  exit 2
fi
# The gpu tests' workloads: fobench's own table (`fobench --list workloads`) less those that are
# part of another one (ag_gemm of mlp: the whole runs instead); FOB_CHECKS_WORKLOADS chooses.
mapfile -t WORKLOADS < <("$FOBENCH" --list workloads 2>/dev/null | awk '
  /^[^ ]/ { if (w != "") print w; w = $1; sub(/:$/, "", w) }
  /^  part of: / { w = "" }
  END { if (w != "") print w }')
LEFT_OUT=""
if ((${#WORKLOADS[@]} == 0)); then LEFT_OUT=" (all: \`fobench --list workloads\` listed none)"; fi
if [[ -n "${FOB_CHECKS_WORKLOADS:-}" ]]; then
  read -r -a chosen <<<"$FOB_CHECKS_WORKLOADS"
  for w in "${chosen[@]}"; do
    if [[ " ${WORKLOADS[*]} " != *" $w "* ]]; then
      echo "run_checks: FOB_CHECKS_WORKLOADS: no workload '$w' (${WORKLOADS[*]})" >&2
      exit 2
    fi
  done
  for w in "${WORKLOADS[@]}"; do
    if [[ " ${chosen[*]} " != *" $w "* ]]; then LEFT_OUT+=" $w"; fi
  done
  WORKLOADS=("${chosen[@]}")
fi

START=$SECONDS
DEADLINE=$((START + BUDGET))
mkdir -p -- "$1"
OUTDIR=$(cd -- "$1" && pwd -P)
# Fresh and private (mktemp -d: mode 700, a new name): nothing can be planted in it.
WORK=$(mktemp -d "$OUTDIR/.checks.XXXXXX")
CHECKS="$WORK/checks"
STEPS="$WORK/steps"
mkdir "$CHECKS"
: >"$STEPS"
MODEL=0  # 1 on the cuda model (on_model, after the version step)
export CHECKS T_REPORT MODEL

# Nothing outside OUTDIR: temporary files, Open MPI's session directory and shared-memory
# files, the CUDA kernel cache, Python's bytecode.
export TMPDIR="$WORK/tmp" HOME="$WORK/home" CUDA_CACHE_PATH="$WORK/cuda-cache"
mkdir -p "$TMPDIR" "$HOME" "$CUDA_CACHE_PATH"
export OMPI_MCA_btl_vader_backing_directory="$TMPDIR" PYTHONDONTWRITEBYTECODE=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# NVIDIA's container runtime may put nvidia-smi there without putting it on PATH.
export PATH="$PATH:/usr/local/nvidia/bin"
CUMEM_RETRY=1
if [[ -n "${NCCL_CUMEM_ENABLE:-}" ]]; then CUMEM_RETRY=0; fi
CUMEM_NOTE=""

failed=0 skipped=0 na=0 steps=0
CAUSE=""     # why no GPU can be used here, "" when one can: said once in the summary
NO_GPU=0     # CAUSE, and nvidia-smi lists no GPU: the GPU steps are skipped
CHILD=""     # the timeout of the step running now
RESULTS=()   # results files of the steps that passed, for check_results

GPUS=0
DEVICES="none found (nvidia-smi not found on PATH or in /usr/local/nvidia/bin)"
if command -v nvidia-smi >/dev/null 2>&1; then
  DEVICES=$(timeout -k 2 5 nvidia-smi \
    --query-gpu=index,name,compute_cap,driver_version,memory.total --format=csv,noheader \
    2>/dev/null) || DEVICES="none found (nvidia-smi failing)"
  GPUS=$(timeout -k 2 5 nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
# The bundle's cuda module is built with CUDA 13, whose runtime needs an R580 or newer driver
# (without the cuda-compat forward-compatibility package, which the bundle does not carry).
DRIVER_NOTE=""
driver=$(sed -n '1s/^[^,]*,[^,]*,[^,]*, *\([0-9]*\)\..*/\1/p' <<<"$DEVICES")
if [[ -n "$driver" && "$driver" -lt 580 ]]; then
  DRIVER_NOTE="driver $driver is older than R580, the first for CUDA 13: the cuda backend cannot run here"
fi

# --- the summary: written again after every step, and published beside the archive ----------

# publish SRC NAME: SRC copied to OUTDIR/NAME whole: a new file renamed over NAME (a link or
# file already there is replaced, never written through).
publish() {
  local tmp
  tmp=$(mktemp "$OUTDIR/.$2.XXXXXX")
  cat "$1" >"$tmp"
  chmod 644 "$tmp"
  mv -fT "$tmp" "$OUTDIR/$2" || { rm -f "$tmp"; echo "run_checks: cannot write $OUTDIR/$2" >&2; }
}

DRIVER_PART='^(.*), driver [^,]*(,.*)$'
# found_libraries: what the launcher found (bin/fob-libs) and what fobench --version says of
# the cuda backend, without the cause it gives (the summary says that once, above).
found_libraries() {
  if [[ -f "$CHECKS/libraries.log" ]]; then
    grep -E '^  lib(cuda|cublas|cublasLt|cudart|nccl|cupti)\.so' "$CHECKS/libraries.log" || true
  else
    echo "  (not looked for yet)"
  fi
  local line
  if [[ -f "$CHECKS/version.log" ]]; then
    while IFS= read -r line; do
      if [[ $line == *" device(s) visible ("* ]]; then
        line="${line%%" device(s) visible ("*} device(s) visible"
      fi
      # What the unusable driver is, the cause above says.
      if [[ -n "$CAUSE" && $line =~ $DRIVER_PART ]]; then
        line="${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
      fi
      echo "  fobench --version: $line"
    done < <(grep -E '^(backends|cuda):' "$CHECKS/version.log" || true)
  fi
}

write_summary() {
  {
    echo "fobench GPU checks from the bundle, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
    echo "bundle: $ROOT ($(sed -n 's/^# fobench git //p' "$ROOT/MANIFEST" 2>/dev/null))"
    if [[ $MODEL == 1 ]]; then
      echo "device: $MODEL_DEVICE, the cuda model: CPU threads, not a GPU (FOB_CUDA_MODULE=${FOB_CUDA_MODULE:-unset})"
      echo "  on the model: the correctness steps run; those whose meaning is a GPU's are n/a"
    else
      echo "devices (index, name, compute capability, driver, memory):"
      printf '%s\n' "$DEVICES" | sed 's/^/  /'
      if [[ -n "$DRIVER_NOTE" ]]; then echo "  NOTE: $DRIVER_NOTE"; fi
    fi
    if [[ -n "$LEFT_OUT" ]]; then
      echo "gpu tests left out (FOB_CHECKS_WORKLOADS=${FOB_CHECKS_WORKLOADS:-}):$LEFT_OUT"
    fi
    if [[ -n "$CAUSE" ]]; then
      if [[ $NO_GPU == 1 ]]; then
        echo "no usable GPU: $CAUSE"
      else
        echo "GPU UNUSABLE although nvidia-smi lists $GPUS: $CAUSE"
      fi
    fi
    echo "libraries found on this machine:"
    found_libraries
    local cumem=${NCCL_CUMEM_ENABLE:-unset} copy=$OMPI_MCA_btl_vader_single_copy_mechanism
    echo "environment: OMPI_MCA_btl_vader_single_copy_mechanism=$copy," \
      "NCCL_CUMEM_ENABLE=$cumem${CUMEM_NOTE:+ ($CUMEM_NOTE)}"
    echo
    echo "steps (checks/<step>.log in checks.tgz; bound = the step's time limit):"
    cat "$STEPS"
    if [[ -f "$CHECKS/fairness.log" ]]; then
      echo
      echo "fairness (tests/gpu Fairness.*, docs/fairness.md):"
      fairness_lines
    fi
    local said="" line
    if [[ -f "$CHECKS/hardware.log" ]]; then
      said=$(grep -v '^[$+] \|^exit status' "$CHECKS/hardware.log" | head -n 60 || true)
    fi
    if [[ -n "$said" ]]; then
      echo
      echo "what the hardware said (fobench report --hardware, rank 0):"
      while IFS= read -r line; do echo "  $line"; done <<<"$said"
    fi
    if [[ -f "$CHECKS/check_results.log" ]]; then
      echo
      echo "results files:"
      grep -E '\.h5: |^\(no results' "$CHECKS/check_results.log" | sed 's/^/  /' || true
    fi
    echo
    echo "$1"
  } >"$CHECKS/summary.txt"
  publish "$CHECKS/summary.txt" summary.txt
}

# record NAME STATUS EXIT SECONDS BOUND [NOTE]: STATUS ok, FAILED, skipped or n/a (not
# applicable on the cuda model: neither passed nor failed).
record() {
  steps=$((steps + 1))
  case $2 in
    FAILED) failed=$((failed + 1)) ;;
    skipped) skipped=$((skipped + 1)) ;;
    n/a) na=$((na + 1)) ;;
  esac
  printf '  %-26s %-7s exit %-3s %4ss (bound %3ss)  %s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" |
    tee -a "$STEPS"
  write_summary "result: running ($steps steps so far, $((SECONDS - START))s)"
}

# first_reason LOG: the line of a failed step's log most likely to say why.
first_reason() {
  local pattern
  for pattern in 'cannot run' 'error|fail' 'not found|no such|missing'; do
    if grep -v '^[$+] ' "$1" | grep -m1 -iE "$pattern" | sed 's/^ *//' | grep .; then return 0; fi
  done
  grep -v '^exit status' "$1" | grep -v '^[$+] ' | tail -n1 | sed 's/^ *//' || true
}

# limit_for BOUND [RESERVED]: BOUND, or less where the budget (less RESERVED, default RESERVE,
# and the kill grace) has less left; 0 when under MIN_STEP is left.
limit_for() {
  local left=$((DEADLINE - ${2:-$RESERVE} - GRACE - SECONDS))
  if ((left < MIN_STEP)); then
    echo 0
  elif (($1 < left)); then
    echo "$1"
  else
    echo "$left"
  fi
}

# bounded LIMIT LOG CMD...: CMD under timeout, its output appended to LOG; sets RC. Waits in
# the background, so that a SIGTERM to this script is handled at once (on_signal).
bounded() {
  local limit=$1 log=$2
  shift 2
  timeout -k "$GRACE" "$limit" "$@" >>"$log" 2>&1 </dev/null &
  CHILD=$!
  RC=0
  wait "$CHILD" || RC=$?
  CHILD=""
}

# step NAME BOUND [--nccl] [--results FILE] [--driver-only] -- CMD...: CMD with its output in
# checks/NAME.log, its status recorded. --nccl: it uses NCCL (retried without cuMem, see above);
# --results: the results file it writes, checked later when it passes; --driver-only: a failure
# that only reports libcuda.so.1 missing is the cause already said where there is no GPU, and
# is recorded as skipped. CMD may be --step FUNCTION ARGS.
step() {
  local name=$1 bound=$2 nccl=0 results="" driver_only=0 start=$SECONDS limit note="" status=ok
  shift 2
  while [[ $1 != -- ]]; do
    case $1 in
      --nccl) nccl=1 ;;
      --results) results=$2 && shift ;;
      --driver-only) driver_only=1 ;;
    esac
    shift
  done
  shift
  if [[ $1 == --step ]]; then set -- "$BASH" "$SELF" "$@"; fi
  local log="$CHECKS/$name.log"
  limit=$(limit_for "$bound" "${STEP_RESERVE:-}")
  if ((limit == 0)); then
    echo "not run: the budget of ${BUDGET}s (FOB_CHECKS_BUDGET) was spent" >"$log"
    record "$name" FAILED - 0 "$bound" "not run: the overall budget of ${BUDGET}s was spent"
    return
  fi
  echo "== $name" >&2
  { printf '$'; printf ' %q' "$@"; printf '\n'; } >"$log"
  bounded "$limit" "$log" "$@"
  local rc=$RC
  if [[ $rc -ne 0 && $nccl == 1 && $CUMEM_RETRY == 1 && $rc -ne 77 ]]; then
    # Sandboxes (gVisor) may refuse NCCL's cuMem allocations: once, try without them.
    CUMEM_RETRY=0
    local first
    first=$(grep -m1 'NCCL WARN' "$log" | sed 's/.*NCCL WARN *//' || true)
    first=$(cut -c1-100 <<<"${first:-$(first_reason "$log")}")
    limit=$(limit_for "$bound" "${STEP_RESERVE:-}")
    if ((limit > 0)); then
      echo "== $name: exit $rc; again with NCCL_CUMEM_ENABLE=0" | tee -a "$log" >&2
      NCCL_CUMEM_ENABLE=0 bounded "$limit" "$log" "$@"
      if [[ $RC -eq 0 ]]; then
        export NCCL_CUMEM_ENABLE=0
        CUMEM_NOTE="from $name on, which failed ($first) and passed with it"
        note="passed only with NCCL_CUMEM_ENABLE=0"
        rc=0
      else
        note="failed with NCCL_CUMEM_ENABLE=0 too"
      fi
    fi
  fi
  echo "exit status: $rc" >>"$log"
  if [[ $rc -eq 77 ]]; then
    # 77 is "skipped: no usable GPU"; here a GPU was seen, so it is a failure: show why.
    status=FAILED
    note="exit 77 (skipped) although $(seen_gpus)"
    echo "$name: $note; its output:" >&2
    tail -n 40 "$log" | sed 's/^/  | /' >&2
  elif [[ $rc -eq 1 && $driver_only == 1 && $NO_GPU == 1 ]] && only_driver_missing "$log"; then
    status=skipped
    note="libcuda.so.1 not found: no usable GPU (above)"
  elif [[ $rc -ne 0 ]]; then
    status=FAILED
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then note="timed out after ${limit}s${note:+; $note}"; fi
    if [[ -z "$note" || $rc -eq 124 || $rc -eq 137 ]]; then
      local reason
      reason=$(first_reason "$log")
      # The cause, when it is why, is said once, above the steps.
      if [[ -n "$CAUSE" ]]; then reason=${reason//"$CAUSE"/the cause above}; fi
      note="${note:+$note; }$(cut -c1-100 <<<"$reason")"
    fi
  elif [[ -n "$results" ]]; then
    RESULTS+=("$results")
  fi
  record "$name" "$status" "$rc" $((SECONDS - start)) "$limit" "$note"
}

# only_driver_missing LOG: bin/fob-libs' report in LOG names no missing library but the driver.
only_driver_missing() {
  grep -q '^  libcuda\.so\.1 *NOT FOUND$' "$1" &&
    ! grep -v '^  libcuda\.so\.1 ' "$1" | grep 'NOT FOUND$' >/dev/null
}

seen_gpus() {
  if ((GPUS > 0)); then echo "nvidia-smi lists $GPUS GPU(s)"; else echo "fobench sees a device"; fi
}

# gpu_step NAME BOUND [step options] -- CMD...: a step that needs a GPU: not run where there is
# none (NO_GPU), recorded as skipped without repeating the cause.
gpu_step() {
  if [[ $NO_GPU == 1 ]]; then
    echo "not run: no usable GPU ($CAUSE)" >"$CHECKS/$1.log"
    record "$1" skipped - 0 "$2" "not run: no usable GPU (above)"
    return
  fi
  step "$@"
}

# gpu_only NAME BOUND WHY [step options] -- CMD...: a step whose meaning is a GPU's (its
# performance, nvidia-smi): on the cuda model recorded as not applicable, never run.
gpu_only() {
  if [[ $MODEL == 1 ]]; then
    not_applicable "$1" "$2" "$3"
    return
  fi
  local name=$1 bound=$2
  shift 3
  gpu_step "$name" "$bound" "$@"
}

# not_applicable NAME BOUND WHY: recorded as not applicable on the cuda model, not run.
not_applicable() {
  echo "not run: not applicable on the model ($MODEL_DEVICE): $3" >"$CHECKS/$1.log"
  record "$1" n/a - 0 "$2" "not applicable on the model: $3"
}

# on_model: the CUDA runtime fobench --version names is the cuda model's (it exports
# fobmodel_identity, the mark src/backends/cuda/model_guard.cpp tells the model by). The
# results files confirm it: check_results requires their device to be the model's.
on_model() {
  local line runtime
  line=$(grep -m1 '^cuda: ' "$CHECKS/version.log" 2>/dev/null) || return 1
  [[ $line =~ ^cuda:\ CUDA\ runtime\ [^\ ]+\ \(([^\)]+)\) ]] || return 1
  runtime=${BASH_REMATCH[1]}
  [[ -f "$runtime" ]] && grep -qa fobmodel_identity "$runtime"
}

# settle_cause: CAUSE and NO_GPU from the libraries and fobench --version.
settle_cause() {
  local line=""
  line=$(grep -m1 '^cuda: ' "$CHECKS/version.log" 2>/dev/null || true)
  line=${line#cuda: }
  if [[ -z "$line" ]]; then
    CAUSE="fobench --version failed: $(first_reason "$CHECKS/version.log" | cut -c1-160)"
  elif [[ $line =~ ,\ ([0-9]+)\ device\(s\)\ visible ]] && ((BASH_REMATCH[1] > 0)); then
    CAUSE=""
  elif [[ $line == *" device(s) visible ("* ]]; then
    CAUSE=${line#*" device(s) visible ("}
    CAUSE=${CAUSE%)}
  elif [[ $line == *" device(s) visible"* ]]; then
    CAUSE="the CUDA runtime sees no device"
  else
    CAUSE="the cuda backend cannot run: $line"
  fi
  if [[ -n "$CAUSE" ]] && ((GPUS == 0)); then NO_GPU=1; fi
}

# --- the end: the summary's last line, the archive, the exit status ---------------------------

archive() {
  local tmp bytes
  tmp=$(mktemp "$OUTDIR/.checks.tgz.XXXXXX")
  tar -C "$WORK" -czf "$tmp" checks
  bytes=$(stat -c %s "$tmp")
  if ((bytes > MAX_ARCHIVE)); then
    echo "note: the .h5 files are not in checks.tgz: with them it was $bytes bytes (16 MiB at" \
      "most); their .md and .json reports are" >>"$CHECKS/summary.txt"
    publish "$CHECKS/summary.txt" summary.txt
    tar -C "$WORK" -czf "$tmp" --exclude='*.h5' checks
  fi
  chmod 644 "$tmp"
  mv -fT "$tmp" "$OUTDIR/checks.tgz" ||
    { echo "run_checks: cannot write $OUTDIR/checks.tgz; the archive is $tmp" >&2; return 1; }
}

finish() {
  local result code
  if ((failed > 0)); then
    result="result: $failed of $steps steps FAILED"
    if ((skipped > 0)); then result+=", $skipped skipped"; fi
    if ((na > 0)); then result+=", $na not applicable on the model"; fi
    code=1
  elif [[ $NO_GPU == 1 ]]; then
    result="result: no usable GPU here: $skipped of $steps steps skipped, none failed"
    code=77
  elif [[ $MODEL == 1 ]]; then
    result="result: all $((steps - skipped - na)) correctness steps passed on the $MODEL_DEVICE"
    result+=", $na not applicable on the model"
    if ((skipped > 0)); then result+=", $skipped skipped"; fi
    code=0
  elif ((skipped > 0)); then
    result="result: $((steps - skipped)) of $steps steps passed, $skipped skipped"
    code=0
  else
    result="result: all $steps steps passed"
    code=0
  fi
  if [[ -n "${1:-}" ]]; then
    result="result: cut short by $1 after $steps steps, $failed FAILED"
    code=1
  fi
  write_summary "$result"
  archive || code=1
  rm -rf "$WORK"
  echo "$result ($((SECONDS - START))s); $OUTDIR/summary.txt, $OUTDIR/checks.tgz"
  exit "$code"
}

# on_signal SIG: an outer timeout or ^C: stop the step running, keep what there is.
on_signal() {
  trap '' TERM INT HUP
  if [[ -n "$CHILD" ]]; then
    kill -TERM "$CHILD" 2>/dev/null || true
    local waited=0
    # timeout passes the TERM on, and KILLs GRACE seconds later.
    while kill -0 "$CHILD" 2>/dev/null && ((waited < 2 * (GRACE + 1))); do
      sleep 0.5
      waited=$((waited + 1))
    done
  fi
  finish "SIG$1"
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
trap 'on_signal HUP' HUP

# --- 1-3: the version (and whether this is the cuda model), the device, the libraries ---------
step version "$T_VERSION" -- "$FOBENCH" --version
settle_cause
if on_model; then
  MODEL=1
  T_GPU_TEST=$MODEL_T_GPU_TEST T_SMOKE=$MODEL_T_SMOKE
  CUMEM_RETRY=0  # the model has no cuMem to refuse
fi
if [[ $MODEL == 1 ]]; then
  not_applicable nvidia_smi "$T_SMI" "nvidia-smi reports GPUs, and the model is none"
elif command -v nvidia-smi >/dev/null 2>&1; then
  step nvidia_smi "$T_SMI" -- sh -c 'nvidia-smi -L && nvidia-smi &&
    nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv'
else
  echo "nvidia-smi: not found on PATH ($PATH)" >"$CHECKS/nvidia_smi.log"
  record nvidia_smi skipped - 0 "$T_SMI" "nvidia-smi not found (PATH, /usr/local/nvidia/bin)"
fi
step libraries "$T_LIBS" --driver-only -- "$ROOT/bin/fob-libs"
write_summary "result: running ($steps steps so far, $((SECONDS - START))s)"

# --- 4-6: the GPU steps, the most telling first: what the budget cuts is the rest of the gpu
# tests. The gpu tests per workload: NCCL at 1 rank (with loopback plans), MPI at 2 ranks.
gpu_tests() {  # gpu_tests WORKLOAD
  # On the model the attention workloads run at their small shape (softmax: 256 fibers a row,
  # every access checked), as the model's own tests run them.
  local small=()
  if [[ $MODEL == 1 && ($1 == attn || $1 == ulysses) ]]; then small=(--small); fi
  gpu_step "gpu_nccl_np1_$1" "$T_GPU_TEST" --nccl -- "$MPIRUN" -np 1 "${MPI_FLAGS[@]}" \
    "$ROOT/bin/fob_gpu_tests" --transport=nccl "--workload=$1" "${small[@]}"
  gpu_step "gpu_mpi_np2_$1" "$T_GPU_TEST" -- "$MPIRUN" -np 2 "${MPI_FLAGS[@]}" \
    -x CUDA_VISIBLE_DEVICES=0 "$ROOT/bin/fob_gpu_tests" --transport=mpi "--workload=$1" \
    "${small[@]}"
}
smoke() {  # smoke NAME NP TRANSPORT DTYPE [mpirun options]
  local name=$1 np=$2 transport=$3 dtype=$4 nccl=()
  shift 4
  if [[ $transport == nccl ]]; then nccl=(--nccl); fi
  gpu_step "$name" "$T_SMOKE" "${nccl[@]}" --results "$name.h5" -- "$MPIRUN" -np "$np" \
    "${MPI_FLAGS[@]}" "$@" "$FOBENCH" run -c "$SMOKE" --backend cuda --transport "$transport" \
    --dtype "$dtype" --verify --force -o "$CHECKS/$name.h5"
}
mlp() {  # mlp NAME [fobench options]
  local name=$1
  shift
  gpu_only "$name" "$T_MLP" "a paper-sized timing, whose meaning is a GPU's speed" \
    --nccl --results "$name.h5" -- "$MPIRUN" -np 1 "${MPI_FLAGS[@]}" \
    "$FOBENCH" run -c "$SMOKE" "${MLP_SHAPE[@]}" --strategies "$MLP_STRATEGIES" --backend cuda \
    --transport nccl "$@" --no-verify --force -o "$CHECKS/$name.h5"
}

# What every strategy gets alike (docs/fairness.md): the reference collectives on an
# uncapped communicator and the overlapping ones capped, every buffer registered, timed
# iterations held until their last launch, GEMMs given fewer SMs only beside a transfer, timed
# data unlike the verified data; each check by name in the summary.
if [[ " ${WORKLOADS[*]} " == *" mlp "* ]]; then gpu_tests mlp; fi
gpu_step fairness "$T_GPU_TEST" --nccl -- "$MPIRUN" -np 1 "${MPI_FLAGS[@]}" \
  "$ROOT/bin/fob_gpu_tests" --transport=nccl --gtest_filter='Fairness.*'
smoke smoke_nccl_np1_fp32 1 nccl fp32
smoke smoke_nccl_np1_bf16 1 nccl bf16
# Transport ce copies between two ranks' GPUs (skipped with one): smoke, and gemm_rs's additions.
devices=$(sed -n 's/^cuda: .*, \([0-9][0-9]*\) device(s) visible$/\1/p' "$CHECKS/version.log")
if [[ $NO_GPU == 1 ]] || ((${devices:-0} >= 2)); then
  smoke smoke_ce_np2_fp32 2 ce fp32
  gpu_step gpu_ce_np2_gemm_rs "$T_GPU_TEST" -- "$MPIRUN" -np 2 "${MPI_FLAGS[@]}" \
    "$ROOT/bin/fob_gpu_tests" --transport=ce --workload=gemm_rs
else
  for name in smoke_ce_np2_fp32 gpu_ce_np2_gemm_rs; do
    echo "not run: transport ce needs a GPU per rank, and ${devices:-no} GPU(s) are visible" \
      >"$CHECKS/$name.log"
    record "$name" skipped - 0 "$T_SMOKE" "transport ce needs 2 GPUs; ${devices:-no} visible"
  done
fi
smoke smoke_mpi_np2_fp32 2 mpi fp32 -x CUDA_VISIBLE_DEVICES=0
smoke smoke_mpi_np2_bf16 2 mpi bf16 -x CUDA_VISIBLE_DEVICES=0
mlp mlp_nccl_np1
mlp mlp_nccl_np1_graphs --graphs
gpu_only gemm_slices_cuda "$T_GEMM" "cuBLAS timings, whose meaning is a GPU's speed" -- \
  --step gemm_slices
for w in "${WORKLOADS[@]}"; do
  if [[ $w != mlp ]]; then gpu_tests "$w"; fi
done

# --- 7: a report of every results file, and a check of each -----------------------------------
STEP_RESERVE=$((RESERVE / 2)) step reports "$((T_REPORT * 6))" -- --step reports_md
STEP_RESERVE=$((RESERVE / 2)) step hardware "$((T_REPORT * 6))" -- --step hardware_facts
STEP_RESERVE=5 step check_results "$((T_REPORT * 6))" -- --step check_results "${RESULTS[@]}"
finish
