#!/usr/bin/env bash
# Runs fobench on a cuda module built from a copy of the backend with one defect planted
# (plant.py) and expects the model to catch it, with the message that names it.
#   planted.sh PLANT MODULE
set -euo pipefail
plant=$1
export FOB_CUDA_MODULE=$2 FOB_MODEL_FATAL=1 FOB_MODEL_DEADLOCK_S=3
fobench=${FOBENCH:?}
mpiexec=${MPIEXEC:-mpirun}
config=${FOB_SOURCE_DIR:?}/bench_configs/smoke.yaml
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log=$scratch/run.log
fail() {
  echo "FAIL: $plant: $*" >&2
  echo "--- its output:" >&2
  tail -n 30 "$log" >&2 || true
  exit 1
}

# run NP SECONDS ARGS...: fobench run under mpirun; sets rc and the run's wall time.
run() {
  local np=$1 limit=$2 start=$SECONDS
  shift 2
  rc=0
  timeout -k 5 "$limit" "$mpiexec" -np "$np" --oversubscribe --bind-to none -x FOB_CUDA_MODULE \
    -x FOB_MODEL_FATAL -x FOB_MODEL_DEADLOCK_S "$fobench" run -c "$config" --backend cuda \
    --hidden 144 --ffn 144 -o "$scratch/run.h5" "$@" >"$log" 2>&1 || rc=$?
  took=$((SECONDS - start))
}
expect_report() {  # expect_report EXTENDED-REGEX: the model's report, in the run's output
  grep -qE "$1" "$log" || fail "no report matching '$1' (exit $rc)"
  echo "ok: $plant caught (exit $rc, ${took}s): $(grep -oE "$1" "$log" | sed -n 1p | cut -c1-200)"
}

case $plant in
  removed_wait | misdirected_wait)
    # flash's comm stream sends what the compute stream computed, and back.
    run 2 120 --strategies flash --verify
    [[ $rc != 0 ]] || fail "the run passed"
    expect_report '\[cuda model\] race: .*task "[^"]+".* and .*task "[^"]+"'
    ;;
  swapped_transpose)
    run 1 120 --strategies baseline --verify
    [[ $rc == 1 ]] || fail "exit $rc, not 1 (a verification failure)"
    expect_report 'VERIFY FAILED.*'
    ;;
  ungrouped_exchange)
    run 2 120 --strategies decompose --verify
    [[ $rc != 0 ]] || fail "the run passed"
    ((took < 60)) || fail "reported after ${took}s, not within seconds"
    expect_report '\[cuda model\] deadlock: ranks wait for each other in a cycle \((0 -> 1 -> 0|1 -> 0 -> 1)\)'
    # ...naming each rank's call and what it waits for.
    for r in 0 1; do
      grep -qE "rank $r's ncclSend #[0-9]+ to rank $((1 - r)) .*waiting for rank $((1 - r)) to post its ncclRecv" "$log" ||
        fail "the report does not name rank $r's blocked call"
    done
    ;;
  sync_in_capture)
    run 1 120 --strategies baseline --verify --graphs
    [[ $rc == 3 ]] || fail "exit $rc, not 3 (a runtime fault)"
    expect_report 'planted: cudaStreamSynchronize: .*capturing'
    ;;
  no_api_activity)
    run 1 120 --strategies baseline --verify
    [[ $rc == 0 ]] || fail "exit $rc: the run should complete, timed by events"
    expect_report 'CUPTI recorded no origin marker'
    "$fobench" report "$scratch/run.h5" --format csv >"$scratch/report.csv"
    grep -q '^# timer: cuda events (stream order)' "$scratch/report.csv" ||
      fail "the file does not say its times are events: $(grep '^# timer' "$scratch/report.csv")"
    ;;
  capped_reference | unregistered | ungated | integer_timing | sm_target_everywhere)
    # What docs/fairness.md promises, checked by fairness.sh: it must fail, naming
    # the broken promise.
    declare -A want=(
      [capped_reference]="comm_only's collectives ran on max_ctas \['16'\]"
      [unregistered]='\[cuda model\] nccl-unregistered'
      [ungated]='gated iterations, expected'
      [integer_timing]='read the verified integers'
      [sm_target_everywhere]="compute_only's GEMMs had SM targets")
    start=$SECONDS
    rc=0
    timeout -k 5 300 bash "$(dirname "$0")/fairness.sh" >"$log" 2>&1 || rc=$?
    took=$((SECONDS - start))
    [[ $rc != 0 ]] || fail "fairness.sh passed"
    expect_report "${want[$plant]}"
    ;;
  ce_removed_arrival_wait | ce_removed_ready_wait)
    # flash's transfers between processes, on the copy engines: the detector sees a peer's copy
    # and this rank's GEMM touch one buffer with no flag ordering them.
    run 2 120 --strategies flash --verify --transport ce
    [[ $rc != 0 ]] || fail "the run passed"
    expect_report '\[cuda model\] race: .*task "[^"]+".* and .*task "[^"]+"'
    ;;
  ce_wrong_peer_offset)
    # Half a block off: past the end of the peer's buffer, or over another block.
    run 2 120 --strategies baseline,flash --verify --transport ce
    [[ $rc != 0 ]] || fail "the run passed"
    expect_report '\[cuda model\] (memcheck|race): .*|VERIFY FAILED.*'
    ;;
  *) fail "no such plant" ;;
esac
