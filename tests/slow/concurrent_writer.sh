#!/usr/bin/env bash
# A live results file is never touched by a second run: a second writer, with --force or
# --resume, is refused (exit 2, naming the first run) and the first run finishes a file that
# report reads, holding every case.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
out="$scratch/live.h5"

mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -n 200 -w 1 \
  --link-latency-us 1000 -o "$out" > "$scratch/first.out" 2> "$scratch/first.err" &
first=$!
for _ in $(seq 1 600); do
  [ -e "$out.partial" ] && break
  sleep 0.1
done
[ -e "$out.partial" ] || fail "the first run did not start its file"

for attempt in force resume; do
  rc=0
  if [ "$attempt" = force ]; then
    mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -n 2 --force -o "$out" \
      > "$scratch/$attempt.out" 2> "$scratch/$attempt.err" || rc=$?
  else
    mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -n 200 -w 1 \
      --link-latency-us 1000 --resume "$out.partial" \
      > "$scratch/$attempt.out" 2> "$scratch/$attempt.err" || rc=$?
  fi
  [ "$rc" = 2 ] || { cat "$scratch/$attempt.err" >&2; fail "second writer ($attempt): exit $rc"; }
  grep -q "the run with pid .* is writing it" "$scratch/$attempt.err" || {
    cat "$scratch/$attempt.err" >&2
    fail "second writer ($attempt): the message does not name the first run"
  }
  "$FOBENCH" report "$out.partial" > /dev/null || fail "the live file is unreadable after $attempt"
  echo "ok: second writer ($attempt) refused: $(head -n1 "$scratch/$attempt.err")"
done

rc=0
wait "$first" || rc=$?
[ "$rc" = 0 ] || { cat "$scratch/first.err" >&2; fail "the first run: exit $rc"; }
n=$("$FOBENCH" report "$out" --format csv | grep -v '^#' | tail -n +2 | wc -l)
n_want=$("$FOBENCH" run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --dry-run --world 2 | grep -c "^rank 0/2 ")
[ "$n" = "$n_want" ] || fail "the first run's file holds $n cases, expected $n_want"
[ ! -e "$out.lock" ] || fail "the finished run left its lock file"
echo "ok: the first run finished with all $n cases"
