#!/usr/bin/env bash
# Bad input under a launcher: exit code 2, a message naming the culprit, and no output file.
# Each check of the config and the command line runs in-process (tests/unit/test_bad_input.cpp);
# here are those that need run's ranks: one config error and one world-size error end to end
# (every rank exits 2, rank 0 reports), and a results file that exists.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
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

# What fobench repeats of its arguments is escaped and cut: an escape sequence given to --list
# (or to `run --list`, which takes none) is shown as \x1b, never sent to the terminal, and a
# 100 KB argument is cut at 80 characters, never repeated whole.
esc=$(printf 'wor\033[31mkloads\033]0;title\007')
long=$(head -c 100000 /dev/zero | tr '\0' a)
for args in "--list|$esc" "--list|$long" "--list|workloads|$esc|$long" "run|--list|$esc" \
  "run|--list|$long" "sim|--machine|$FOB_SOURCE_DIR/bench_configs/machines/cpu_shm.yaml|--world|$esc"; do
  IFS='|' read -ra argv <<< "$args"
  rc=0
  "$FOBENCH" "${argv[@]}" > "$scratch/echo.out" 2> "$scratch/echo.err" || rc=$?
  [ "$rc" = 2 ] || fail "fobench ${argv[0]} ${argv[1]}: exit $rc, expected 2"
  ! LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$scratch/echo.err" ||
    fail "fobench ${argv[0]} ${argv[1]} echoed a control character: $(cat -v "$scratch/echo.err")"
  size=$(wc -c < "$scratch/echo.err")
  [ "$size" -lt 1000 ] || fail "fobench ${argv[0]} ${argv[1]} echoed $size bytes"
done
"$FOBENCH" --list "$esc" 2> "$scratch/echo.err" || true
grep -qF 'wor\x1b[31mkloads\x1b]0;title\x07' "$scratch/echo.err" ||
  fail "--list does not show the escapes: $(cat -v "$scratch/echo.err")"
echo "ok: arguments echoed escaped and cut: $(head -n 1 "$scratch/echo.err")"

# A comparison of files whose cases match but hold one iteration each (-n 1) names the matched
# cases as matched: it said "no case of one matches a case of the other" and then "7 matched
# case(s) could not be compared".
for side in base new; do
  mpirun_np 2 run -c "$smoke" --strategies baseline,flash -n 1 -w 0 --rounds 1 \
    -o "$scratch/$side.h5" > /dev/null 2>&1 || fail "the -n 1 run exited $?"
done
expect_input_error compare_one_iteration "case(s) of one match a case of the other, but none" \
  compare "$scratch/base.h5" "$scratch/new.h5"
! grep -q "no case of one matches" "$scratch/compare_one_iteration.err" ||
  fail "compare contradicts itself: $(cat "$scratch/compare_one_iteration.err")"
