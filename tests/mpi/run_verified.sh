#!/usr/bin/env bash
# Every strategy of one workload at one world size, verified against the oracle: bit-exact,
# or for attention's softmax within the bound README.md states.
# usage: run_verified.sh NP WORKLOAD [more fobench run arguments]
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
np=$1
workload=$2
shift 2
out="$scratch/run.h5"
strategies=baseline,slicing:2,slicing:3,decompose,flash,flash:2,flash_direct,flash_direct:3
# Query split applies to the attention workloads only.
case $workload in attn | ulysses) strategies="$strategies,flash_qs,flash_qs:3" ;; esac

mpirun_np "$np" run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --workload "$workload" \
  --strategies "$strategies" -o "$out" "$@" || fail "fobench run exited $?"
[ -f "$out" ] || fail "no results file $out"

# Every case must say it was checked and passed: exit 0 alone would also hold if nothing
# had been verified.
"$FOBENCH" report "$out" --format csv > "$scratch/report.csv"
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
