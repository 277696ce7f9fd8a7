#!/usr/bin/env bash
# Benchmark (not a test: it measures and records, it does not pass or fail on accuracy): the
# simulator against this machine. Measures a 2-rank CPU run, calibrates a machine file from it,
# simulates the same config with that file and prints each strategy's predicted step time beside
# the measured median, with the error; writes results/bench-sim-accuracy-<workload>-<time>.json.
#
#   bench/sim_accuracy.sh [FOBENCH]      (ninja -C build bench-sim-accuracy)
#   FOB_SIM_ACCURACY_WORKLOAD=moe bench/sim_accuracy.sh [FOBENCH]
#
# mlp (the default): b·s = 2048, d = 256, F = 1024 over a 1 Gbit/s emulated link. moe: the
# shape of bench_configs/moe_cpu.yaml (8 experts, top-2, d = 512, expert FFN 1792, 2048
# tokens) with its link_ratio 0.4, the emulated link that puts T_comm / T_comp near 0.4 on this
# CPU, so the all-to-alls, the gathers and the GLUs are all calibrated and priced.
#
# 60 iterations in 30 rounds: each strategy sees the same stretches of a shared machine's
# drifting speed, two iterations at a time, so the medians compare like with like. The shape
# (b·s = 2048) keeps each step near 30 ms, so thread wake-ups and MPI's own overheads, which no
# per-task model prices, stay small against the GEMMs and transfers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
python=${FOB_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
workload=${FOB_SIM_ACCURACY_WORKLOAD:-mlp}
case "$workload" in
  mlp)
    cat > "$work/measure.yaml" <<'YAML'
workload: mlp
batch: 4
seq: 512
hidden: 256
ffn: 1024
dtype: fp32
strategies: [baseline, slicing:2, decompose, flash, flash_direct]
link_gbps: 1
link_latency_us: 50
YAML
    ;;
  moe)
    cat > "$work/measure.yaml" <<'YAML'
workload: moe
batch: 1
seq: 2048
hidden: 512
experts: 8
top_k: 2
expert_ffn: 1792
dtype: fp32
strategies: [baseline, slicing:2, slicing:4, flash, flash:2, flash_direct]
link_ratio: 0.4
link_latency_us: 20
YAML
    ;;
  *)
    echo "sim_accuracy.sh: FOB_SIM_ACCURACY_WORKLOAD '$workload': choose mlp or moe" >&2
    exit 2
    ;;
esac
cat >> "$work/measure.yaml" <<'YAML'
iters: 60
rounds: 30
warmup: 2
backend: cpu
verify: false
YAML
BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh 2 -c "$work/measure.yaml" \
  -o "$work/measured.h5" > /dev/null
"$fobench" calibrate "$work/measured.h5" -o "$work/here.yaml"
"$fobench" sim -c "$work/measure.yaml" --machine "$work/here.yaml" --world 2 --format csv \
  > "$work/sim.csv"
"$fobench" report "$work/measured.h5" --format csv > "$work/measured.csv"
mkdir -p results
out="results/bench-sim-accuracy-$workload-$(date +%Y%m%d-%H%M%S).json"
"$python" - "$work/measured.csv" "$work/sim.csv" "$out" <<'PY'
import csv, json, sys
def rows(path):
    return {r["strategy"]: r for r in csv.DictReader(l for l in open(path) if not l.startswith("#"))}
measured, simulated = rows(sys.argv[1]), rows(sys.argv[2])
points = []
for strategy, m in measured.items():
    t_m, t_s = float(m["t_ms"]), float(simulated[strategy]["t_ms"])
    error = (t_s - t_m) / t_m
    points.append({"strategy": strategy, "measured_ms": t_m, "simulated_ms": t_s, "error": error})
    print(f"{strategy:14s} measured {t_m:8.3f} ms  simulated {t_s:8.3f} ms  {100 * error:+6.1f}%")
json.dump({"points": points}, open(sys.argv[3], "w"), indent=2)
PY
echo "recorded: $out"
