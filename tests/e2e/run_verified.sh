#!/usr/bin/env bash
# Every strategy of one workload at one world size, verified against the oracle: bit-exact,
# or for attention's softmax within the bound docs/correctness.md#verification-of-attention states.
# usage: run_verified.sh NP WORKLOAD [more fobench run arguments]
# With FOB_EXPECT_TIMER set, the file's /system timer must start with it: every iteration of
# every case was taken by that timer (a case that fell back to another makes it say "mixed").
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
np=$1
workload=$2
shift 2
out="$scratch/run.h5"
# Every strategy `fobench --list strategies` says applies to the workload (reference modes run
# anyway): each as it comes and, where it takes a parameter, cut into 3 uneven pieces; slicing
# and flash also into 2.
strategies=$("$FOBENCH" --list strategies | awk -v w="$workload" '
  /^[^ ]/ { name = $1; sub(/:$/, "", name); param = (name ~ /\[:/); sub(/\[.*/, "", name) }
  /^  role: reference/ { name = "" }
  /^  workloads: / && name != "" {
    line = $0; sub(/^  workloads: /, "", line); n = split(line, ws, /, /)
    for (i = 1; i <= n; i++) if (ws[i] == w) {
      out = out (out == "" ? "" : ",") name (param ? "," name ":3" : "")
      if (name == "slicing" || name == "flash") out = out "," name ":2"
    }
  }
  END { print out }')
[ -n "$strategies" ] || fail "fobench --list strategies names none for $workload"

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
