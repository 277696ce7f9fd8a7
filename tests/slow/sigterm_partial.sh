#!/usr/bin/env bash
# A sweep stopped by SIGTERM (as Slurm does at its time limit) leaves a .partial file that holds
# its finished cases and that report reads.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
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
echo "ok: .partial holds $n cases after SIGTERM"
# mpirun signalled itself (Open MPI 4) sends the ranks SIGCONT, sleeps odls_base_sigkill_timeout
# seconds in its event loop, then SIGTERM, sleeps again and sends SIGKILL (open-mpi/ompi PR
# 7032): the line each rank writes on SIGTERM goes through output forwarding that mpirun may
# never serve again. Where it arrives, it must be right; that it arrives is checked below, where
# the ranks are signalled as Slurm does.
# kept_adds_up ERR FILE SIGNAL: ERR's kept line names FILE and adds up to the cases FILE holds.
kept_adds_up() {
  local kept whole partly n
  kept=$(grep -o "rank 0: stopped by $3; [0-9]* case(s)\( and [0-9]* partly measured one(s)\)\? are kept in '$2'" "$1") ||
    return 1
  n=$("$FOBENCH" report "$2" --format csv | grep -v '^#' | tail -n +2 | wc -l)
  # Cases measured through their last round and those with rounds to come add up to the file's.
  whole=$(sed 's/.*; \([0-9]*\) case.*/\1/' <<< "$kept")
  partly=$(sed -n 's/.* and \([0-9]*\) partly.*/\1/p' <<< "$kept")
  [ $((whole + ${partly:-0})) = "$n" ] || fail "the kept line ($kept) does not add up to the $n cases"
  echo "ok: stderr says what was kept: $whole whole, ${partly:-0} partly measured"
}
kept_adds_up "$scratch/run.err" "$out.partial" SIGTERM ||
  echo "note: mpirun signalled: the ranks' stop line did not come through its teardown"

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
kept_adds_up "$scratch/ranks.err" "$scratch/ranks.h5.partial" SIGTERM || {
  cat "$scratch/ranks.err" >&2
  fail "ranks signalled: stderr does not say what was kept"
}
"$FOBENCH" report "$scratch/ranks.h5.partial" > /dev/null || fail "ranks signalled: unreadable"
echo "ok: SIGTERM to the ranks: exit 4, the .partial readable"

# SIGHUP (a closed terminal, a dropped ssh session) is a stop like SIGTERM: exit 4 and the line
# that says what is kept, not the default's silent death.
"$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run \
  -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -n 150 -w 1 --link-latency-us 2000 \
  -o "$scratch/hup.h5" > "$scratch/hup.out" 2> "$scratch/hup.err" &
pid=$!
for _ in $(seq 1 600); do
  if [ -e "$scratch/hup.h5.partial" ] && "$FOBENCH" report "$scratch/hup.h5.partial" \
    --format csv 2> /dev/null | grep -v '^#' | tail -n +2 | grep -q .; then
    break
  fi
  sleep 0.2
done
pkill -HUP -f -- "^$FOBENCH run .*$scratch/hup.h5" || fail "no rank to signal"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 4 ] || { cat "$scratch/hup.err" >&2; fail "SIGHUP: exit $rc, expected 4"; }
grep -q "rank 0: stopped by SIGHUP; [0-9]* case(s).* kept in '$scratch/hup.h5.partial'" \
  "$scratch/hup.err" || {
  cat "$scratch/hup.err" >&2
  fail "SIGHUP: stderr does not say what was kept"
}
"$FOBENCH" report "$scratch/hup.h5.partial" > /dev/null || fail "SIGHUP: .partial unreadable"
echo "ok: SIGHUP to the ranks: exit 4, what is kept said, the .partial readable"

# A closed stdout loses the printed lines only: the run goes on, finishes its results file and
# exits 0. Its stdout here is a pipe whose reader is gone before the first line, with SIGPIPE at
# its default (Python would leave it ignored in the process it starts).
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"
closed_stdout() {
  "$FOB_PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
r, w = os.pipe()
os.close(r)
os.dup2(w, 1)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
# complete FILE: the finished file, no .partial, holding the three cases of --strategies baseline.
complete() {
  [ -e "$1" ] && [ ! -e "$1.partial" ] || fail "$1: no finished file"
  n=$("$FOBENCH" report "$1" --format csv | grep -v '^#' | tail -n +2 | wc -l)
  [ "$n" = 3 ] || fail "$1 holds $n cases, expected 3"
}
rc=0
closed_stdout "$FOBENCH" run -c "$smoke" --strategies baseline -o "$scratch/closed.h5" \
  2> "$scratch/closed.err" || rc=$?
[ "$rc" = 0 ] || { cat "$scratch/closed.err" >&2; fail "closed stdout: exit $rc, expected 0"; }
complete "$scratch/closed.h5"
set +e
"$FOBENCH" run -c "$smoke" --strategies baseline -o "$scratch/head.h5" 2> "$scratch/head.err" |
  head -1 > "$scratch/head.out"
status=("${PIPESTATUS[@]}")
set -e
[ "${status[0]}" = 0 ] || fail "run | head -1: exit ${status[0]}, expected 0"
grep -q "^# fobench" "$scratch/head.out" || fail "run | head -1: no first line"
complete "$scratch/head.h5"
echo "ok: a closed stdout: exit 0, the results file complete"

# SIGTERM while the finished file is renamed into place: held until it is, then exit 4 saying
# where the results are (not a .partial that no longer exists).
FOB_TEST_STOP="0:finishing the results file" "$FOBENCH" run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" \
  -o "$scratch/fin.h5" > /dev/null 2> "$scratch/fin.err" &
pid=$!
for _ in $(seq 600); do
  [ "$(ps -o stat= -p "$pid" | cut -c1)" != T ] || break
  sleep 0.1
done
[ "$(ps -o stat= -p "$pid" | cut -c1)" = T ] || fail "the run did not reach the final rename"
kill -TERM "$pid"
kill -CONT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 4 ] || { cat "$scratch/fin.err" >&2; fail "SIGTERM at the rename: exit $rc, expected 4"; }
grep -q "stopped by SIGTERM; the run finished; its results are in '$scratch/fin.h5'" \
  "$scratch/fin.err" || { cat "$scratch/fin.err" >&2; fail "SIGTERM at the rename: wrong note"; }
[ -e "$scratch/fin.h5" ] && [ ! -e "$scratch/fin.h5.partial" ] || fail "SIGTERM at the rename: files"
"$FOBENCH" report "$scratch/fin.h5" > /dev/null || fail "SIGTERM at the rename: the file does not read"
echo "ok: SIGTERM at the final rename: exit 4, the note names the finished file"
