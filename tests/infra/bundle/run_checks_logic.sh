#!/usr/bin/env bash
# The bundle's run_checks.sh on a machine that has a GPU, played by fakes: a fake nvidia-smi
# listing one H200, and fake bundle programs (fobench, fob_gpu_tests, mpirun, fob-libs, the
# cuBLAS benchmark) that pass, hang, fail like a sandbox refusing NCCL's cuMem allocations, or
# exit 77. Checks what no machine here can show with real programs:
#  1. every step passes: exit 0; OUTDIR holds checks.tgz and summary.txt only, both written
#     whole over links planted at their names (the links' targets untouched); the archive holds
#     every log, results file and report;
#  2. a NCCL step refused cuMem is tried again with NCCL_CUMEM_ENABLE=0, and the later ones run
#     with it; a gpu test exiting 77 while nvidia-smi lists a GPU is a failure;
#  3. a GPU nvidia-smi lists but the driver cannot use fails every GPU step, the cause said
#     once;
#  4. a hanging step deaf to SIGTERM is cut, and the overall budget holds, kill grace
#     included: the steps it no longer fits are recorded as not run;
#  5. SIGTERM (an outer timeout) stops the run within seconds, with the summary and archive.
# Needs no build and no bundle: the fake bundle is made around scripts/bundle/run_checks.sh.
# shellcheck disable=SC2016 # the fakes' scripts are written in single quotes
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
F="$scratch/fake bundle"
FAKEBIN=$scratch/fakebin
mkdir -p "$F/bin" "$F/configs" "$FAKEBIN"
cp "$FOB_SOURCE_DIR"/scripts/bundle/{run_checks.sh,run_checks_steps.sh} "$F/"
echo "# fobench git 0000000000000000000000000000000000000000" >"$F/MANIFEST"
: >"$F/configs/smoke.yaml"

# fake NAME BODY: an executable bash script bin/NAME.
fake() {
  printf '#!/usr/bin/env bash\nset -u\n%s\n' "$2" >"$F/bin/$1"
  chmod +x "$F/bin/$1"
}
# The behaviour is chosen by the environment: FAKE_HANG (an -o file name or a workload that
# sleeps), FAKE_CUMEM=1 (NCCL fails unless NCCL_CUMEM_ENABLE=0), FAKE_77 (transport:workload
# of a gpu test that exits 77), FAKE_NODEV=1 (no device visible, for the reason FAKE_CAUSE).
cumem='if [[ ${FAKE_CUMEM:-0} == 1 && $t == nccl && ${NCCL_CUMEM_ENABLE:-} != 0 ]]; then
  echo "host:1:2 [0] include/alloc.h:300 NCCL WARN Cuda failure 801 operation not supported (cuMemCreate)"
  exit 1
fi'
fake mpirun 'while [[ $1 == -* ]]; do
  case $1 in -x) export "${2?}" && shift ;; -np | --bind-to) shift ;; esac
  shift
done
exec "$@"'
fake fob-libs 'echo "  libcuda.so.1       /usr/local/nvidia/lib64/libcuda.so.1 [driver folder]"'
nodev='if [[ ${FAKE_NODEV:-0} == 1 ]]; then
  echo "fobench: error: backend: cuda but no CUDA device is visible to this rank ($FAKE_CAUSE)"
  exit 2
fi'
fake fob_gpu_tests 't=${1#--transport=} w=${2#--workload=}
'"$nodev"'
if [[ ${FAKE_HANG:-} == "$w" ]]; then trap "" TERM && sleep 1000; fi
'"$cumem"'
if [[ ${FAKE_77:-} == "$t:$w" ]]; then echo "no GPU on this machine: skipping"; exit 77; fi
if [[ $w == --gtest_filter=* ]]; then echo "[       OK ] Fairness.EveryBufferIsRegistered (3 ms)"; fi
echo "[  PASSED  ] 50 tests."'
fake fob_gemm_slices_cuda 'for a; do case $a in --benchmark_out=*) out=${a#*=} ;; esac; done
echo "{\"benchmarks\": [{\"name\": \"BM_gemm/1\"}]}" >"$out"'
fake fobench 'case $1 in
  --list) exec '"$FOBENCH"' "$@" ;;
  --version)
    echo "backends: cpu, cuda"
    devices="2 device(s) visible"
    if [[ ${FAKE_NODEV:-0} == 1 ]]; then devices="0 device(s) visible ($FAKE_CAUSE)"; fi
    echo "cuda: CUDA runtime 13.0 (static), driver 13.0 (/usr/local/nvidia/lib64/libcuda.so.1), cuBLAS 13.1.0 (x), NCCL 2.28.9 (y), $devices" ;;
  run)
    t="" out=""
    while [[ $# -gt 0 ]]; do
      case $1 in --transport) t=$2 ;; -o) out=$2 ;; esac
      shift
    done
    if [[ ${FAKE_HANG:-} == "$(basename "$out")" ]]; then sleep 1000; fi
    '"$nodev"'
    '"$cumem"'
    echo "fake results" >"$out" ;;
  report)
    if [[ ${4:-} != csv ]]; then echo "# report of $2"; exit 0; fi
    printf "%s\n" "# backend: cuda" "# transport: nccl" "# world_size: 1" \
      "case_id,strategy,verified,t_ms,t_min_ms,t_p90_ms" "0000,baseline,1,1.5,1.4,1.6" ;;
esac'
printf '#!/bin/sh\ncase "$1" in\n  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-0)" ;;\n' >"$FAKEBIN/nvidia-smi"
printf '  --query-gpu=*) echo "0, NVIDIA H200, 9.0, 580.65.06, 143771 MiB" ;;\n' >>"$FAKEBIN/nvidia-smi"
printf '  *) echo "fake nvidia-smi" ;;\nesac\n' >>"$FAKEBIN/nvidia-smi"
chmod +x "$FAKEBIN/nvidia-smi"

# checks OUT [VAR=VALUE...]: run_checks.sh OUT in the fake's environment; sets RC and ELAPSED.
checks() {
  local out=$1 start=$SECONDS
  shift
  RC=0
  env -u NCCL_CUMEM_ENABLE PATH="$FAKEBIN:$PATH" "$@" timeout -k 5 200 "$F/run_checks.sh" \
    "$out" >"$scratch/log" 2>&1 || RC=$?
  ELAPSED=$((SECONDS - start))
}

# recorded OUT: every step is in the summary, with a status.
recorded() {
  check_recorded "$1/summary.txt" 'ok|FAILED|skipped'
}

# only_outputs OUT: OUTDIR holds checks.tgz and summary.txt, regular files, and nothing else.
only_outputs() {
  local listing
  listing=$(cd "$1" && find . -mindepth 1 -printf '%y %P\n' | LC_ALL=C sort)
  [[ $listing == $'f checks.tgz\nf summary.txt' ]] || fail "OUTDIR holds:"$'\n'"$listing"
}

# The steps: 16 of the bundle's own and two per workload whose gpu tests run, the table's
# less those part of another (run_checks.sh reads the same list).
whole=$("$FOBENCH" --list workloads | awk '/^[^ ]/ { n++ } /^  part of: / { n-- } END { print n }')
steps=$((16 + 2 * whole))

# --- 1. everything passes, over planted links ---------------------------------------------------
out=$scratch/out1
mkdir "$out"
echo "victim" >"$scratch/victim"
ln -s "$scratch/victim" "$out/summary.txt"
ln -s "$scratch/victim" "$out/checks.tgz"
checks "$out"
[[ $RC == 0 ]] || { cat "$scratch/log" >&2; fail "all passing: exit $RC"; }
[[ $(cat "$scratch/victim") == victim ]] || fail "a planted link was written through"
only_outputs "$out"
recorded "$out"
[[ $(tail -n1 "$out/summary.txt") == "result: all $steps steps passed" ]] ||
  fail "last line: $(tail -n1 "$out/summary.txt")"
grep -q 'OMPI_MCA_btl_vader_single_copy_mechanism=none' "$out/summary.txt" ||
  fail "Open MPI's single copy is not off"
tar -xzf "$out/checks.tgz" -C "$scratch" || fail "checks.tgz does not unpack"
for f in summary.txt version.log gpu_mpi_np2_ulysses.log smoke_mpi_np2_bf16.h5 mlp_nccl_np1.md \
  mlp_nccl_np1_graphs.csv gemm_slices_cuda.json; do
  [[ -f "$scratch/checks/$f" ]] || fail "checks.tgz lacks checks/$f"
done
cmp -s "$scratch/checks/summary.txt" "$out/summary.txt" || fail "two different summaries"
grep -qE '^  \[ +OK +\] Fairness\.EveryBufferIsRegistered$' "$out/summary.txt" ||
  fail "the summary does not name each fairness check"
grep -q 'smoke_nccl_np1_fp32.h5: ok (backend cuda.*all verified' "$out/summary.txt" ||
  fail "the results check is not in the summary"
ok "all pass: exit 0, OUTDIR holds checks.tgz and summary.txt only, links replaced, not followed"

# --- 2. NCCL without cuMem; a gpu test exiting 77 beside a GPU ------------------------------------
out=$scratch/out2
checks "$out" FAKE_CUMEM=1 FAKE_77=mpi:attn
[[ $RC == 1 ]] || { cat "$scratch/log" >&2; fail "cuMem and 77: exit $RC"; }
recorded "$out"
grep -qE '^  gpu_nccl_np1_mlp +ok .*passed only with NCCL_CUMEM_ENABLE=0' "$out/summary.txt" ||
  fail "the first NCCL step was not retried without cuMem:"$'\n'"$(cat "$out/summary.txt")"
grep -q 'NCCL_CUMEM_ENABLE=0 (from gpu_nccl_np1_mlp on, which failed (Cuda failure 801.*cuMem' \
  "$out/summary.txt" ||
  fail "the summary does not say NCCL runs without cuMem from there on"
grep -qE '^  (smoke_nccl_np1_bf16|mlp_nccl_np1_graphs|gpu_nccl_np1_gemm_ar) +ok' "$out/summary.txt" ||
  fail "later NCCL steps did not run without cuMem"
grep -qE '^  gpu_mpi_np2_attn +FAILED +exit 77 .*although nvidia-smi lists 1 GPU' \
  "$out/summary.txt" || fail "exit 77 beside a listed GPU is not a failure"
[[ $(tail -n1 "$out/summary.txt") == "result: 1 of $steps steps FAILED" ]] ||
  fail "last line: $(tail -n1 "$out/summary.txt")"
ok "a NCCL step refused cuMem passes again without it, the later ones run without; 77 beside a GPU fails"

# --- 3. nvidia-smi lists a GPU that the driver cannot use: every GPU step fails, the cause once
out=$scratch/out5
cause="the CUDA driver at /usr/local/nvidia/lib64/libcuda.so.1 (CUDA 13.0) sees no GPU"
checks "$out" FAKE_NODEV=1 FAKE_CAUSE="$cause"
[[ $RC == 1 ]] || { cat "$scratch/log" >&2; fail "an unusable GPU: exit $RC"; }
recorded "$out"
grep -qxF "GPU UNUSABLE although nvidia-smi lists 1: $cause" "$out/summary.txt" ||
  fail "the summary does not say the listed GPU is unusable:"$'\n'"$(cat "$out/summary.txt")"
[[ $(grep -cF "$cause" "$out/summary.txt") == 1 ]] ||
  fail "the cause is not named once:"$'\n'"$(cat "$out/summary.txt")"
grep -qE '^  smoke_mpi_np2_fp32 +FAILED +exit 2 .*\(the cause above\)' "$out/summary.txt" ||
  fail "a failed step does not point to the cause:"$'\n'"$(cat "$out/summary.txt")"
ok "a listed GPU the driver cannot use: every GPU step fails, the cause named once"

# --- 4. a hanging step, the overall budget --------------------------------------------------------
# The smallest budget: the first gpu test hangs, deaf to SIGTERM, until the kill grace is over.
out=$scratch/out3
budget=60
checks "$out" FOB_CHECKS_BUDGET=$budget FAKE_HANG=mlp
[[ $RC == 1 ]] || { cat "$scratch/log" >&2; fail "hanging steps: exit $RC"; }
((ELAPSED <= budget)) || fail "took ${ELAPSED}s, over the budget of ${budget}s"
recorded "$out"
only_outputs "$out"
grep -qE '^  gpu_nccl_np1_mlp +FAILED +exit 137 .*timed out after [0-9]+s' "$out/summary.txt" ||
  fail "the hanging step was not cut:"$'\n'"$(cat "$out/summary.txt")"
grep -qE '^  gpu_nccl_np1_attn +FAILED +exit - .*not run: the overall budget of 60s was spent' \
  "$out/summary.txt" || fail "a step past the budget is not recorded as not run"
grep -qE '^  check_results +ok' "$out/summary.txt" || fail "the results were not checked"
ok "a hanging step is cut, kill grace included; steps past the budget are recorded as not" \
  "run; ${ELAPSED}s <= ${budget}s"

# --- 5. SIGTERM -------------------------------------------------------------------------------------
out=$scratch/out4
env -u NCCL_CUMEM_ENABLE PATH="$FAKEBIN:$PATH" FAKE_HANG=mlp "$F/run_checks.sh" "$out" \
  >"$scratch/log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q '^== gpu_nccl_np1_mlp' "$scratch/log" && break
  sleep 0.2
done
start=$SECONDS
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((SECONDS - start <= 15)) || fail "SIGTERM took $((SECONDS - start))s to end the run"
[[ $rc == 1 ]] || fail "after SIGTERM: exit $rc"
only_outputs "$out"
grep -q '^result: cut short by SIGTERM' "$out/summary.txt" ||
  fail "last line after SIGTERM: $(tail -n1 "$out/summary.txt")"
for cmdline in /proc/[0-9]*/cmdline; do
  if tr '\0' ' ' <"$cmdline" 2>/dev/null | grep -qF "$F/bin/fob_gpu_tests"; then
    fail "the step outlived SIGTERM: $(tr '\0' ' ' <"$cmdline")"
  fi
done
ok "SIGTERM ends the run in $((SECONDS - start))s with the summary and the archive"

shellcheck -x "$FOB_SOURCE_DIR/scripts/bundle/run_checks.sh" || fail "shellcheck run_checks.sh"
