#!/usr/bin/env bash
# A rank stopped (SIGSTOP: a debugger, a wedged node) at any moment must end the job with exit 3
# within --timeout, the waiting rank naming itself and what it waited in, and no process left.
# FOB_TEST_STOP=RANK:TEXT makes RANK stop itself where it reaches the step named TEXT, so each
# moment is hit for certain; one more run is stopped from outside at a random moment.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
printf 'timeout: 2\n' > "$scratch/timeout.yaml"

# stopped NAME RANK:TEXT PATTERN: the other rank must report PATTERN.
stopped() {
  local name=$1 spec=$2 pattern=$3 rc=0 start end
  start=$(date +%s)
  FOB_TEST_STOP="$spec" timeout 120 "$MPIEXEC" -np 2 --oversubscribe --bind-to none \
    -x FOB_TEST_STOP "$FOBENCH" run -c "$scratch/timeout.yaml" --workload mlp --batch 2 \
    --seq 64 --hidden 64 --strategies baseline,flash -n 4 -w 1 --rounds 2 \
    -o "$scratch/$name.h5" > "$scratch/$name.out" 2> "$scratch/$name.err" || rc=$?
  end=$(date +%s)
  [ "$rc" = 3 ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $rc, expected 3"; }
  # 2 s of timeout, plus start-up and the rank's work before it waits, on a loaded machine.
  [ $((end - start)) -le 40 ] || fail "$name: took $((end - start)) s"
  grep -q "rank [01]: waited [0-9]* s (--timeout[^)]*) for rank [01] in $pattern" "$scratch/$name.err" || {
    cat "$scratch/$name.err" >&2
    fail "$name: the message does not name the rank and '$pattern'"
  }
  if pgrep -f -- "$scratch/$name.h5" > /dev/null; then
    pkill -9 -f -- "$scratch/$name.h5" || true
    fail "$name: a rank was left running"
  fi
  echo "ok: $name: exit 3 in $((end - start)) s: $(grep -m1 'waited' "$scratch/$name.err" | cut -c1-150)"
}

stopped init "1:MPI_Init" "MPI_Init"
stopped config "0:the broadcast of the config" "the broadcast of the config file"
stopped settings "0:the check that every rank" "the check that every rank holds the same settings"
stopped backend "1:setting up the" "setting up the cpu backend"
stopped hosts "1:gathering every rank's host" "gathering every rank's host"
stopped output "0:the broadcast of rank 0's verdict" "the broadcast of rank 0's verdict"
stopped verify "1:the reduction of the verification before" "the reduction of the verification"
stopped barrier "1:the barrier that starts" "the barrier that starts an iteration"
stopped step "0:the reduction of timed iteration 2" "the reduction of timed iteration 2"
stopped gather "1:gathering the case's timings" "gathering the case's timings"
# Rank 0 writing is work, not a lost rank: the other waits --timeout and the write's allowance.
stopped writing "0:writing case 0001" "rank 0 writing case 0001 to disk"
stopped finishing "0:finishing the results file" "rank 0 writing the finished results file"
stopped finalize "1:MPI_Finalize" "MPI_Finalize"

# From outside, at a moment no test chose: whatever the rank was doing, the job ends. Enough
# iterations that the run is still going when it is stopped, however fast the machine (a tiny
# case's iteration takes tens of microseconds).
rc=0
start=$(date +%s)
timeout 120 "$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run \
  -c "$scratch/timeout.yaml" --workload mlp --batch 2 --seq 64 --hidden 64 -n 200000 -w 1 \
  -o "$scratch/outside.h5" > "$scratch/outside.out" 2> "$scratch/outside.err" &
job=$!
sleep 3
victim=$(pgrep -f -- "^$FOBENCH run .*$scratch/outside.h5" | tail -n 1 || true)
[ -n "$victim" ] || fail "outside: no rank to stop"
kill -STOP "$victim"
wait "$job" || rc=$?
end=$(date +%s)
[ "$rc" = 3 ] || { cat "$scratch/outside.err" >&2; fail "outside: exit $rc, expected 3"; }
[ $((end - start)) -le 60 ] || fail "outside: took $((end - start)) s"
grep -q -e "waited 2 s (--timeout)" -e "did not finish within 2 s" "$scratch/outside.err" || {
  cat "$scratch/outside.err" >&2
  fail "outside: no timeout message"
}
echo "ok: outside: exit 3: $(grep -m1 -e waited -e 'did not finish' "$scratch/outside.err" | cut -c1-150)"
