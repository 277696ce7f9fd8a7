#!/usr/bin/env bash
# A sweep over the MoE keys (top_k 1 and 2, skew, seed, capacity) at 2 ranks, every moe strategy:
# every point routes other tokens than the one before, and every case must verify against its
# own point's oracle (an oracle output kept per shape must tell the points apart by every shape
# field). Arguments go on to fobench run (the cuda model's test passes --backend cuda).
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
cat > "$scratch/sweep.yaml" <<'YAML'
workload: moe
batch: 1
seq: 64
hidden: 32
experts: 5
top_k: [1, 2]
expert_ffn: 40
moe_skew: [0, 1.5]
moe_seed: [1, 2]
capacity_factor: [0, 1.25]
dtype: fp32
strategies: [baseline, slicing:2, flash, flash:2, flash_direct]
iters: 2
warmup: 1
backend: cpu
verify: true
YAML
out="$scratch/sweep.h5"
mpirun_np 2 run -c "$scratch/sweep.yaml" -o "$out" "$@" > "$scratch/run.out" 2>&1 || {
  grep -m 5 "VERIFY FAILED" "$scratch/run.out" >&2
  fail "fobench run exited $?"
}
"$FOBENCH" report "$out" --format csv > "$scratch/report.csv"
"$FOB_PYTHON" - "$scratch/report.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
points = {(r['top_k'], r['moe_skew'], r['moe_seed'], r['capacity_factor']) for r in rows}
assert len(points) == 16, f"sweep points {sorted(points)}"
assert len(rows) == 16 * 7, f"{len(rows)} cases"
bad = [(r['strategy'], r['top_k'], r['moe_skew'], r['moe_seed'], r['capacity_factor'])
       for r in rows if r['verified'] != '1']
assert not bad, f"not verified: {bad}"
print(f"{len(rows)} cases over {len(points)} points verified")
PY
