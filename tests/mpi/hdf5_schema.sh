#!/usr/bin/env bash
# A run's file reopens with h5py and matches docs/DESIGN.md section 5 (with the CPU backend's timer
# and a concurrency computed independently from the task times); report reads it back in every
# format, and CSV and JSON carry the same numbers; a file without the timer attribute still reads.
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
grep -q "^- timer: host steady_clock$" "$scratch/report.md" || fail "the report does not name the timer"
grep -q "| concurrency (%) |" "$scratch/report.md" || fail "the report has no concurrency column"

# A file written before /system had a timer still reads, and says its timer is unknown.
cp "$out" "$scratch/old.h5"
"$FOB_PYTHON" -c "import h5py, sys; del h5py.File(sys.argv[1], 'r+')['system'].attrs['timer']" \
  "$scratch/old.h5"
"$FOBENCH" report "$scratch/old.h5" > "$scratch/old.md" || fail "report of a file without a timer exited $?"
grep -qF -- "- timer: unknown (file predates the timer attribute)" "$scratch/old.md" ||
  fail "a file without a timer is not reported as such: $(grep timer "$scratch/old.md")"
echo "hdf5_schema: ok"
