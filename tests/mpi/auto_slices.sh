#!/usr/bin/env bash
# --auto-slices: slicing and flash cases are run with the count a short sweep found fastest, and
# the file records what was tried and chosen.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
out="$scratch/auto.h5"
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline,slicing,flash \
  --auto-slices -n 3 -o "$out" > /dev/null 2> "$scratch/err" || fail "run exited $?"
"$FOB_PYTHON" - "$out" <<'PY'
import re
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    tuned = 0
    for cid, g in f["cases"].items():
        a = g.attrs
        name = a["strategy"].split(":")[0]
        if name in ("slicing", "flash"):
            note = a["auto_slices"]
            tried = re.findall(name + r":(\d+) ([0-9.]+) ms", note)
            assert len(tried) >= 3, note
            chosen = min(tried, key=lambda t: float(t[1]))[0]
            assert note.endswith("chose " + a["strategy"]), note
            assert a["strategy"] == f"{name}:{chosen}", (a["strategy"], note)
            assert int(a["verified"]) == 1
            tuned += 1
        else:
            assert "auto_slices" not in a
    assert tuned == 2, tuned
print("ok: slicing and flash tuned, choices recorded")
PY
