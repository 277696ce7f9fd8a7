#!/usr/bin/env bash
# report --timeline/--breakdown/--speedup on a real 4-rank run: every SVG parses as XML, the
# timeline has one lane per rank and stream and one rect per task the file recorded for that
# iteration, the breakdown one bar per case but comm_only, the speedup one series per strategy;
# an absent case is refused with exit 2 and writes no picture.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
out="$scratch/r.h5"
mpirun_np 4 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --workload mlp \
  --strategies baseline,slicing:2,decompose,flash,flash_direct --link-gbps 2 -n 3 -w 1 \
  -o "$out" > "$scratch/run.log" || fail "run exited $?"

"$FOBENCH" report "$out" --timeline "$scratch/t.svg" --breakdown "$scratch/b.svg" \
  --speedup "$scratch/s.svg" > /dev/null || fail "report with pictures exited $?"
"$FOBENCH" report "$out" --timeline "$scratch/t0005.svg" --case 0005 --iter 1 > /dev/null ||
  fail "report --case 0005 --iter 1 exited $?"

set +e
"$FOBENCH" report "$out" --timeline "$scratch/bad.svg" --case 9999 > /dev/null 2> "$scratch/bad.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--case 9999: exit $rc, want 2"
grep -q "9999" "$scratch/bad.err" || fail "--case 9999: the message does not name the case"
[ ! -e "$scratch/bad.svg" ] || fail "--case 9999 left an SVG behind"

set +e
"$FOBENCH" report "$out" --timeline "$scratch/bad.svg" --case 0005 --iter 3 > /dev/null \
  2> "$scratch/bad.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--iter 3 of 3 iterations: exit $rc, want 2"
grep -q "0\.\.2" "$scratch/bad.err" || fail "--iter 3: the message does not give 0..2"
[ ! -e "$scratch/bad.svg" ] || fail "--iter 3 left an SVG behind"

"$FOB_PYTHON" - "$out" "$scratch" << 'EOF'
import re
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np

path, scratch = sys.argv[1], sys.argv[2]
NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    sys.exit("FAIL: " + msg)


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def classes(el):
    return el.get("class", "").split()


def load(name):
    try:
        return ET.parse(f"{scratch}/{name}").getroot()
    except ET.ParseError as e:
        fail(f"{name} is not well-formed XML: {e}")


with h5py.File(path, "r") as f:
    cases = {}
    for cid, c in f["cases"].items():
        tasks = c["tasks"][()]
        cases[cid] = dict(
            strategy=text(c.attrs["strategy"]),
            world=int(c.attrs["world"]),
            task=tasks["task"],
            start=c["task_start"][()],
            step=c["step_seconds"][()].max(axis=1),
        )
    emulated = text(f["system"].attrs["link_emulation"])

ids = sorted(cases)
if len(ids) != 7:
    fail(f"expected 7 cases (5 strategies + 2 references), got {ids}")


def check_timeline(name, cid, it):
    root = load(name)
    c = cases[cid]
    lanes = [el for el in root.iter(NS + "rect") if "lane" in classes(el)]
    pairs = {(el.get("data-rank"), el.get("data-stream")) for el in lanes}
    if len(lanes) != 8 or len(pairs) != 8:
        fail(f"{name}: {len(lanes)} lanes ({len(pairs)} distinct), want 4 ranks x 2 streams")
    rects = [el for el in root.iter(NS + "rect") if "task" in classes(el)]
    real = int(((c["task"] >= 0) & np.isfinite(c["start"][it])).sum())
    if len(rects) != real:
        fail(f"{name}: {len(rects)} task rects, the file has {real} tasks in iteration {it}")
    if any(r.find(NS + "title") is None for r in rects):
        fail(f"{name}: a task rect without a <title> tooltip")
    title = " ".join("".join(t.itertext()) for t in root.iter(NS + "text"))
    if f"case {cid}:" not in title or f"iteration {it} of" not in title:
        fail(f"{name}: the title does not name case {cid} iteration {it}")
    if emulated not in ("", "none") and "EMULATED link" not in title:
        fail(f"{name}: the link was emulated and the picture does not say so")
    return root


# The default: the first case that is not a reference, at its median iteration.
first = next(i for i in ids if cases[i]["strategy"] not in ("compute_only", "comm_only"))
order = np.argsort(cases[first]["step"], kind="stable")
check_timeline("t.svg", first, int(order[(len(order) - 1) // 2]))
check_timeline("t0005.svg", "0005", 1)

root = load("b.svg")
groups = [g for g in root.iter(NS + "g") if "bar-group" in classes(g)]
want = sorted(i for i in ids if cases[i]["strategy"] != "comm_only")
got = sorted(g.get("data-case") for g in groups)
if got != want:
    fail(f"breakdown: bar groups for cases {got}, want {want}")
if not [el for el in root.iter() if "tlb" in classes(el)]:
    fail("breakdown: no T_lb line")

root = load("s.svg")
series = [g.get("data-strategy") for g in root.iter(NS + "g") if "series" in classes(g)]
want = ["baseline", "decompose", "flash", "flash_direct", "slicing"]
if sorted(series) != want:
    fail(f"speedup: series {sorted(series)}, want one per strategy {want}")
print("pictures: ok")
EOF
