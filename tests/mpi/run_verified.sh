#!/usr/bin/env bash
# Every strategy of one workload at one world size, verified against the oracle: bit-exact,
# or for attention's softmax within the bound docs/DESIGN.md section 6 states.
# usage: run_verified.sh NP WORKLOAD [more fobench run arguments]
# With FOB_EXPECT_TIMER set, the file's /system timer must start with it: every iteration of
# every case was taken by that timer (a case that fell back to another makes it say "mixed").
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
np=$1
workload=$2
shift 2
out="$scratch/run.h5"
strategies=baseline,slicing:2,slicing:3,decompose,flash,flash:2,flash_direct,flash_direct:3
# Query split applies where the workload computes H between its halves (attention's O): its
# entry in `fobench --list workloads` says so.
if "$FOBENCH" --list workloads | awk -v w="$workload:" '$1 == w {f = 1; next} /^[^ ]/ {f = 0}
    f && /computed H/ {found = 1} END {exit !found}'; then
  strategies="$strategies,flash_qs,flash_qs:3"
fi

mpirun_np "$np" run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --workload "$workload" \
  --strategies "$strategies" -o "$out" "$@" || fail "fobench run exited $?"
[ -f "$out" ] || fail "no results file $out"

# Every case must say it was checked and passed: exit 0 alone would also hold if nothing
# had been verified.
"$FOBENCH" report "$out" --format csv > "$scratch/report.csv"
if [[ -n ${FOB_EXPECT_TIMER:-} ]]; then
  timer=$(sed -n 's/^# timer: //p' "$scratch/report.csv")
  [[ $timer == "$FOB_EXPECT_TIMER"* ]] || fail "the file's timer is '$timer', not $FOB_EXPECT_TIMER"
  echo "timer: $timer"
fi
"$FOB_PYTHON" - "$scratch/report.csv" "$strategies" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
want = {'compute_only', 'comm_only', *sys.argv[2].split(',')}
got = {r['strategy'] for r in rows}
assert got == want, f"cases {sorted(got)} != {sorted(want)}"
bad = [r['strategy'] for r in rows if r['verified'] != '1']
assert not bad, f"not verified: {bad}"
print(f"{len(rows)} cases verified")
PY
