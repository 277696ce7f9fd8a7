#!/usr/bin/env bash
# A transfer that cannot finish within --timeout turns into exit 3 naming the rank and the task.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
rc=0
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline \
  --link-latency-us 30000000 --timeout 1 -o "$scratch/t.h5" > "$scratch/out" 2> "$scratch/err" || rc=$?
[ "$rc" = 3 ] || { cat "$scratch/err" >&2; fail "exit $rc, expected 3"; }
grep -q "rank [01]: .*task [0-9]* '" "$scratch/err" || {
  cat "$scratch/err" >&2
  fail "the message does not name the rank and the task"
}
# compute_only finished before the hang and must survive in the .partial file.
"$FOBENCH" report "$scratch/t.h5.partial" > "$scratch/t.md" || fail "report exited $?"
grep -q compute_only "$scratch/t.md" || fail "finished case lost: $(cat "$scratch/t.md")"
echo "ok: $(grep -m1 'did not finish' "$scratch/err")"
