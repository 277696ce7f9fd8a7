#!/usr/bin/env bash
# A sweep stopped by SIGTERM (as Slurm does at its time limit) leaves a .partial file that holds
# its finished cases and that report reads.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
out="$scratch/sweep.h5"

# Long enough per case that the signal lands mid-sweep.
"$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run \
  -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -n 150 -w 1 --link-latency-us 2000 \
  -o "$out" > "$scratch/run.out" 2> "$scratch/run.err" &
pid=$!

# Wait until at least two cases are in the file.
for _ in $(seq 1 600); do
  if [ -e "$out.partial" ] && "$FOBENCH" report "$out.partial" --format csv 2> /dev/null |
    grep -v '^#' | tail -n +2 | grep -q . ; then
    n=$("$FOBENCH" report "$out.partial" --format csv 2> /dev/null | grep -v '^#' | tail -n +2 | wc -l)
    [ "$n" -ge 2 ] && break
  fi
  sleep 0.2
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" != 0 ] || fail "the run finished before SIGTERM; make it longer"
[ -e "$out.partial" ] || fail "no .partial file after SIGTERM"
[ ! -e "$out" ] || fail "a final file exists although the run was stopped"
"$FOBENCH" report "$out.partial" > "$scratch/report.md" || fail "report cannot read the .partial file"
n=$("$FOBENCH" report "$out.partial" --format csv | grep -v '^#' | tail -n +2 | wc -l)
[ "$n" -ge 2 ] || fail "the .partial file holds $n cases, expected at least 2"
grep -q "compute_only" "$scratch/report.md" || fail "finished case compute_only missing"
echo "ok: .partial holds $n finished cases after SIGTERM"
grep -q "rank 0: stopped by SIGTERM; [0-9]* case(s) are kept in '$out.partial'" "$scratch/run.err" || {
  cat "$scratch/run.err" >&2
  fail "stderr does not say what the stopped run kept"
}
echo "ok: stderr says what was kept"

# Slurm signals the ranks themselves (time limit, scancel): the run's own exit code is 4, not
# 1 (a failed verification). mpirun signalled itself answers 1 whatever the ranks say.
"$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run \
  -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -n 150 -w 1 --link-latency-us 2000 \
  -o "$scratch/ranks.h5" > "$scratch/ranks.out" 2> "$scratch/ranks.err" &
pid=$!
for _ in $(seq 1 600); do
  [ -e "$scratch/ranks.h5.partial" ] && break
  sleep 0.1
done
sleep 1
pkill -TERM -f -- "^$FOBENCH run .*$scratch/ranks.h5" || fail "no rank to signal"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 4 ] || { cat "$scratch/ranks.err" >&2; fail "ranks signalled: exit $rc, expected 4"; }
grep -q "stopped by SIGTERM" "$scratch/ranks.err" || fail "ranks signalled: no message"
"$FOBENCH" report "$scratch/ranks.h5.partial" > /dev/null || fail "ranks signalled: unreadable"
echo "ok: SIGTERM to the ranks: exit 4, the .partial readable"
