#!/usr/bin/env bash
# The launch scripts and the shipped configs:
#  1. every jobscripts/*.sh and *.sbatch parses (bash -n) and is shellcheck-clean;
#  2. jobscripts/local.sh runs the smoke config on 2 ranks and writes its file;
#  3. both Slurm scripts run end to end under a stub `srun` (2 ranks of the CPU backend instead
#     of 8 GPUs) and leave the .h5 and its .md report named by the job id;
#  4. every bench_configs/*.yaml passes --dry-run at 4 ranks, and the GPU ones (backend: cuda)
#     at 8 ranks too (one node of 8 GPUs).
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
cd "$FOB_SOURCE_DIR"

# --- 1. syntax and lint ---------------------------------------------------------------------
scripts=()
for f in jobscripts/*.sh jobscripts/*.sbatch; do
  [ -e "$f" ] && scripts+=("$f")
done
[ "${#scripts[@]}" -gt 0 ] || fail "no scripts under jobscripts/"
for f in "${scripts[@]}"; do
  bash -n "$f" || fail "bash -n $f"
done
command -v shellcheck > /dev/null ||
  fail "shellcheck not installed (scripts/deps.sh installs it; apt-get install shellcheck)"
shellcheck -s bash "${scripts[@]}" || fail "shellcheck found problems in jobscripts/"
echo "ok: bash -n and shellcheck on ${#scripts[@]} scripts"

# --- 2. local.sh ----------------------------------------------------------------------------
build_dir=$(cd "$(dirname "$FOBENCH")" && pwd)
BUILD_DIR=$build_dir MPIRUN=$MPIEXEC jobscripts/local.sh 2 -c bench_configs/smoke.yaml \
  -o "$scratch/local.h5" > "$scratch/local.log" 2>&1 ||
  { cat "$scratch/local.log" >&2; fail "jobscripts/local.sh exited non-zero"; }
[ -f "$scratch/local.h5" ] || fail "jobscripts/local.sh wrote no $scratch/local.h5"
echo "ok: jobscripts/local.sh 2 -c bench_configs/smoke.yaml"

# --- 3. the sbatch scripts under a stub srun ------------------------------------------------
# The stub takes srun's options up to the program, keeps --ntasks as the rank count, and runs
# the program under mpirun with the cuda backend swapped for cpu (no GPU needed).
mkdir -p "$scratch/bin"
cat > "$scratch/bin/srun" <<'STUB'
#!/usr/bin/env bash
set -euo pipefail
echo "srun $*" >> "$STUB_LOG"
np=1
while [[ $# -gt 0 && "$1" == -* ]]; do
  case "$1" in
    --ntasks=*) np=${1#--ntasks=} ;;
    -n) np=$2; shift ;;
  esac
  shift
done
args=()
for a in "$@"; do
  [[ "$a" == cuda ]] && a=cpu
  args+=("$a")
done
exec "$STUB_MPIEXEC" -np "$np" --oversubscribe --bind-to none "${args[@]}"
STUB
chmod +x "$scratch/bin/srun"

run_sbatch() { # run_sbatch SCRIPT JOBID VAR=VALUE...
  local script=$1 jobid=$2
  shift 2
  env PATH="$scratch/bin:$PATH" STUB_MPIEXEC="$MPIEXEC" STUB_LOG="$scratch/$jobid.srun" \
    SLURM_JOB_ID="$jobid" \
    SLURM_SUBMIT_DIR="$FOB_SOURCE_DIR" FOBENCH="$FOBENCH" \
    CONFIG="$FOB_SOURCE_DIR/bench_configs/smoke.yaml" OUTDIR="$scratch/out" "$@" \
    bash "$script" > "$scratch/$jobid.log" 2>&1 ||
    { cat "$scratch/$jobid.log" >&2; fail "$script exited non-zero under the stub srun"; }
  [ -f "$scratch/out/fobench-$jobid.h5" ] || fail "$script wrote no fobench-$jobid.h5"
  [ -s "$scratch/out/fobench-$jobid.md" ] || fail "$script wrote no fobench-$jobid.md report"
  grep -q '^fobench ' "$scratch/$jobid.log" || fail "$script did not print fobench --version"
  # Every rank sees all of its node's GPUs, so that NCCL finds their NVLinks (NVIDIA/nccl#1066),
  # and fobench, not srun, binds its CPUs (to the GPU's NUMA node).
  local step
  step=$(grep ' run -c ' "$scratch/$jobid.srun") || fail "$script launched no fobench run"
  for want in --gpus-per-node= --gpu-bind=none --cpu-bind=none; do
    [[ "$step" == *"$want"* ]] || fail "$script: srun lacks $want: $step"
  done
  [[ "$step" != *--gpus-per-task* ]] || fail "$script: srun binds one GPU per task: $step"
  ! grep -Eq '^#SBATCH[[:space:]]+--gpus-per-task' "$script" ||
    fail "$script asks Slurm for one GPU per task"
  grep -Eq '^#SBATCH[[:space:]]+--gpus-per-node=' "$script" ||
    fail "$script does not ask for the node's GPUs"
  echo "ok: $script (stub srun): every rank sees its node's GPUs"
}
run_sbatch jobscripts/slurm_1node_8gpu.sbatch 101 NP=2
run_sbatch jobscripts/slurm_multinode_8gpu.sbatch 102 NODES=1 GPUS_PER_NODE=2

# --- 3b. the interconnect gate job: PASS against its own setting, FAIL against a faster link ---
# (the smoke config's baseline over an emulated link whose 2 ms latency makes each transfer
# link-bound, then 20 ms for the slower link; a 50% threshold, as two short runs on a shared
# 2-core machine can differ by more than 5%)
gate() { # gate JOBID WANT_RC VAR=VALUE...: the gate job under the stub srun, its exit status
  local jobid=$1 want=$2 rc=0
  shift 2
  env PATH="$scratch/bin:$PATH" STUB_MPIEXEC="$MPIEXEC" STUB_LOG="$scratch/$jobid.srun" \
    SLURM_JOB_ID="$jobid" SLURM_SUBMIT_DIR="$FOB_SOURCE_DIR" FOBENCH="$FOBENCH" \
    CONFIG="$FOB_SOURCE_DIR/bench_configs/smoke.yaml" OUTDIR="$scratch/out" THRESHOLD=50 \
    INCONCLUSIVE_AS=pass "$@" bash jobscripts/slurm_interconnect_gate.sbatch \
    > "$scratch/$jobid.log" 2>&1 || rc=$?
  [ "$rc" = "$want" ] ||
    { cat "$scratch/$jobid.log" >&2; fail "the gate job $jobid exited $rc, expected $want"; }
  if [ "$want" = 2 ]; then
    grep -q "REFERENCE=.* is not a file" "$scratch/$jobid.log" ||
      fail "the gate job $jobid did not name its missing reference"
    return
  fi
  [ -s "$scratch/out/gate-$jobid.gate.xml" ] || fail "the gate job $jobid wrote no JUnit XML"
  grep -q '^Result: ' "$scratch/$jobid.log" || fail "the gate job $jobid printed no verdict"
}
link="--link-gbps 1 --link-latency-us 2000 -n 10 --rounds 5 --strategies baseline"
run_sbatch jobscripts/slurm_1node_8gpu.sbatch 103 NP=2 EXTRA_ARGS="$link"
gate 104 0 NP=2 EXTRA_ARGS="$link" REFERENCE="$scratch/out/fobench-103.h5"
gate 105 1 NP=2 EXTRA_ARGS="${link/2000/20000}" REFERENCE="$scratch/out/fobench-103.h5"
grep -q '^Result: FAIL: ' "$scratch/105.log" || fail "the slower link's gate did not say FAIL"
gate 106 2 NP=2 REFERENCE="$scratch/absent.h5"
echo "ok: the interconnect gate job passes its own setting and fails a slower link"

# --- 4. every config dry-runs ---------------------------------------------------------------
n=0
for cfg in bench_configs/*.yaml; do
  worlds=(4)
  grep -Eq '^backend:[[:space:]]*cuda' "$cfg" && worlds+=(8)
  for w in "${worlds[@]}"; do
    "$FOBENCH" run -c "$cfg" --dry-run --world "$w" > /dev/null 2> "$scratch/dry.err" ||
      { cat "$scratch/dry.err" >&2; fail "$cfg: --dry-run --world $w exited non-zero"; }
    n=$((n + 1))
  done
done
echo "ok: $n config dry-runs"
