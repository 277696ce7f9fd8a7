#!/usr/bin/env bash
# A run's file reopens with h5py and matches DESIGN.md section 5; report reads it back in every
# format, and CSV and JSON carry the same numbers.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
out="$scratch/schema.h5"
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline,flash \
  --link-gbps 50 --link-latency-us 5 -n 4 -w 1 -o "$out" || fail "run exited $?"
[ ! -e "$out.partial" ] || fail ".partial left behind after a complete run"
"$FOBENCH" report "$out" > "$scratch/report.md" || fail "report (md) exited $?"
"$FOBENCH" report "$out" --format csv > "$scratch/report.csv" || fail "report (csv) exited $?"
"$FOBENCH" report "$out" --format json > "$scratch/report.json" || fail "report (json) exited $?"
grep -q "EMULATED" "$scratch/report.md" || fail "the report does not say the link was emulated"
"$FOB_PYTHON" "$(dirname "$0")/check_schema.py" "$out" "$scratch/report.csv" "$scratch/report.json"
