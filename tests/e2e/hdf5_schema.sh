#!/usr/bin/env bash
# A run's file reopens with h5py and matches docs/results-schema.md (with the CPU backend's timer
# and a concurrency computed independently from the task times); report reads it back in every
# format, and CSV and JSON carry the same numbers; a file without the timer attribute still reads.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
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
grep -q "| ranks min/avg/max (ms) |" "$scratch/report.md" || fail "the report has no per-rank column"
# How each rank ran: the CPUs its streams ran on, and what its emulated link achieved against
# its target, a fraction in (0, 1]; the per-rank figures in /summary.
"$FOB_PYTHON" - "$out" <<'PY' || fail "the file does not say how each rank ran"
import sys
import h5py
f = h5py.File(sys.argv[1], "r")
for cid, case in f["cases"].items():
    facts = case.attrs["facts"]
    facts = facts.decode() if isinstance(facts, bytes) else str(facts)
    strategy = case.attrs["strategy"]
    strategy = strategy.decode() if isinstance(strategy, bytes) else str(strategy)
    for rank in (0, 1):
        mine = dict(line.split(": ", 1)[1].split("=", 1) for line in facts.splitlines()
                    if line.startswith(f"rank {rank}: "))
        if strategy != "comm_only":
            assert mine["compute_cpus"] != "-", (cid, mine)
        if strategy != "compute_only":
            assert mine["comm_cpus"] != "-", (cid, mine)
            assert 0 < float(mine["link_achieved"]) <= 1.0001, (cid, mine)
summary = f["summary"][()]
assert all(r["slowest_rank"] in (0, 1) and r["rank_t_min"] <= r["rank_t_max"] for r in summary)
run_id = f.attrs["run_id"]
run_id = run_id.decode() if isinstance(run_id, bytes) else str(run_id)
assert len(run_id) == 16 and all(c in "0123456789abcdef" for c in run_id), run_id
PY

# A file written before /system had a timer still reads, and says its timer is unknown.
cp "$out" "$scratch/old.h5"
"$FOB_PYTHON" -c "import h5py, sys; del h5py.File(sys.argv[1], 'r+')['system'].attrs['timer']" \
  "$scratch/old.h5"
"$FOBENCH" report "$scratch/old.h5" > "$scratch/old.md" || fail "report of a file without a timer exited $?"
grep -qF -- "- timer: unknown (file predates the timer attribute)" "$scratch/old.md" ||
  fail "a file without a timer is not reported as such: $(grep timer "$scratch/old.md")"
echo "hdf5_schema: ok"
