#!/usr/bin/env bash
# `fobench report --trace` on a real 2-rank run: the JSON parses, one process per rank, every
# timed task of every iteration is one complete event, every dependency of every iteration is
# one flow start/finish pair; --case/--iter select; a bad --case writes nothing and exits 2.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
out="$scratch/r.h5"
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" \
  --strategies baseline,slicing:2,flash:2 --link-gbps 50 --link-latency-us 5 -n 3 -w 1 \
  -o "$out" > "$scratch/run.log" 2>&1 || { cat "$scratch/run.log" >&2; fail "run exited"; }

"$FOBENCH" report "$out" --trace "$scratch/all.json" > /dev/null || fail "report --trace exited $?"

# check TRACE CASE ITER: compares the trace with the file (CASE empty: every case; ITER -1:
# every iteration).
check() {
  "$FOB_PYTHON" - "$out" "$@" <<'EOF'
import collections
import json
import math
import sys

import h5py

h5_path, trace_path, case_sel, iter_sel = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with open(trace_path) as fh:
    trace = json.load(fh)
events = trace["traceEvents"]
assert trace["displayTimeUnit"] == "ms"
f = h5py.File(h5_path, "r")
world = int(f["system"].attrs["world_size"])
link = f["system"].attrs["link_emulation"]
link = link.decode() if isinstance(link, bytes) else link
assert trace["otherData"]["link_emulation"] == link, trace["otherData"]

names = {e["pid"]: e["args"]["name"] for e in events
         if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(names) == list(range(world)), names
assert all(names[r].startswith(f"rank {r} (") for r in names), names
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
           if e["ph"] == "M" and e["name"] == "thread_name"}
assert all(threads[(r, 0)] == "compute" and threads[(r, 1)] == "comm" for r in range(world))
assert {e["pid"] for e in events if e["ph"] in "Xsf"} == set(range(world))

want, want_flows = set(), 0
for cid, g in f["cases"].items():
    if case_sel and cid != case_sel:
        continue
    tasks, deps = g["tasks"][()], g["deps"][()]
    start, end = g["task_start"][()], g["task_end"][()]
    iters = range(start.shape[0]) if iter_sel < 0 else [iter_sel]
    for i in iters:
        for r in range(tasks.shape[0]):
            for t in range(tasks.shape[1]):
                if tasks[r, t]["task"] != -1 and not math.isnan(start[i, r, t]):
                    want.add((cid, r, int(tasks[r, t]["task"]), i))
        for rank, task, on in deps:
            if not (math.isnan(start[i, rank, task]) or math.isnan(start[i, rank, on])):
                want_flows += 1

complete = [e for e in events if e["ph"] == "X"]
got = collections.Counter((e["args"]["case"], e["pid"], e["args"]["task"], e["args"]["iteration"])
                          for e in complete)
assert all(n == 1 for n in got.values()), [k for k, n in got.items() if n > 1][:5]
assert set(got) == want, (len(got), len(want), sorted(set(got) ^ want)[:5])
assert all(e["dur"] >= 0 and e["tid"] in (0, 1) for e in complete)

starts = {e["id"]: e for e in events if e["ph"] == "s"}
finishes = {e["id"]: e for e in events if e["ph"] == "f"}
assert len(starts) == len([e for e in events if e["ph"] == "s"]), "flow ids repeat"
assert set(starts) == set(finishes), "unpaired flow events"
assert len(starts) == want_flows, (len(starts), want_flows)
for fid, s in starts.items():
    fin = finishes[fid]
    assert fin["bp"] == "e" and s["cat"] == fin["cat"] == "dep"
    assert s["pid"] == fin["pid"] and s["ts"] <= fin["ts"] + 1.0, (s, fin)
print(f"trace ok: {len(complete)} tasks, {len(starts)} flows, case '{case_sel}', iter {iter_sel}")
EOF
}

check "$scratch/all.json" "" -1 || fail "the full trace does not match the file"

flash_case=$("$FOB_PYTHON" -c '
import sys, h5py
f = h5py.File(sys.argv[1], "r")
print(next(c for c in f["cases"] if f["cases"][c].attrs["strategy"] == "flash:2"))' "$out")
"$FOBENCH" report "$out" --trace "$scratch/one.json" --case "$flash_case" --iter 1 > /dev/null ||
  fail "report --trace --case $flash_case --iter 1 exited $?"
check "$scratch/one.json" "$flash_case" 1 || fail "the one-iteration trace does not match the file"

# Bad selections: exit 2, a message naming the value and the choices, and no file.
rc=0
"$FOBENCH" report "$out" --trace "$scratch/bad.json" --case 9999 > /dev/null 2> "$scratch/bad.err" ||
  rc=$?
[ "$rc" -eq 2 ] || fail "a bad --case exited $rc, expected 2"
grep -q "9999" "$scratch/bad.err" || fail "the --case error does not name the value: $(cat "$scratch/bad.err")"
grep -q "$flash_case" "$scratch/bad.err" || fail "the --case error does not list the cases"
[ ! -e "$scratch/bad.json" ] || fail "a bad --case still wrote the trace"
rc=0
"$FOBENCH" report "$out" --trace "$scratch/bad.json" --case "$flash_case" --iter 3 > /dev/null \
  2> "$scratch/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "an --iter past the end exited $rc, expected 2"
grep -q "0..2" "$scratch/bad.err" || fail "the --iter error does not name the range"
[ ! -e "$scratch/bad.json" ] || fail "a bad --iter still wrote the trace"
echo "trace_json: ok"
