#!/usr/bin/env bash
# Bad input under a launcher: exit code 2, a message naming the culprit, and no output file.
# Each check of the config and the command line runs in-process (tests/unit/test_bad_input.cpp);
# here are those that need run's ranks: one config error and one world-size error end to end
# (every rank exits 2, rank 0 reports), and a results file that exists.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"

printf 'workload: mlp\nbatch: 2\nbogus_key: 1\n' > "$scratch/unknown_key.yaml"
expect_bad unknown_key "bogus_key" 2 -c "$scratch/unknown_key.yaml"
expect_bad heads_vs_world "world size 3" 3 -c "$smoke" --workload attn --hidden 48 --heads 4 \
  --seq 6

# An existing results file is never overwritten without --force.
existing="$scratch/existing.h5"
echo "precious" > "$existing"
rc=0
mpirun_np 1 run -c "$smoke" -o "$existing" > /dev/null 2> "$scratch/existing.err" || rc=$?
[ "$rc" = 2 ] || fail "existing output: exit $rc, expected 2"
grep -q -- "--force" "$scratch/existing.err" || fail "existing output: message does not suggest --force"
[ "$(cat "$existing")" = precious ] || fail "existing output was modified"
echo "ok: existing output kept"
