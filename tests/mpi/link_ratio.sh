#!/usr/bin/env bash
# --link-ratio: the run probes before it starts, records in the file the speed it chose and how,
# and the report ends each table with the T_comm / T_comp it reached. How close the landing is
# depends on the machine's noise, so that is a benchmark's, not this test's.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
out="$scratch/ratio.h5"
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline,flash \
  --link-ratio 0.5 --link-latency-us 5 -n 4 -w 1 -o "$out" > "$scratch/run.out" \
  2> "$scratch/run.err" || { cat "$scratch/run.err" >&2; fail "run exited $?"; }
grep -q "^fobench: link_gbps [0-9.e+-]* chosen by link_ratio 0.5 on mlp b2 s72" "$scratch/run.err" ||
  fail "the run does not say which link it chose: $(cat "$scratch/run.err")"
"$FOB_PYTHON" - "$out" <<'PY' || fail "the file does not record the chosen link"
import sys
import h5py
link = h5py.File(sys.argv[1], "r")["system"].attrs["link_emulation"]
link = link.decode() if isinstance(link, bytes) else str(link)
assert link.startswith("emulated: ") and "chosen by link_ratio 0.5" in link, link
assert "compute_only took" in link and "comm_only at 1 Gbit/s" in link, link
PY
"$FOBENCH" report "$out" > "$scratch/report.md" || fail "report exited $?"
grep -q "^T_comm / T_comp = [0-9.]*: " "$scratch/report.md" ||
  fail "the report does not say where the run landed: $(cat "$scratch/report.md")"
echo "link_ratio: ok"
