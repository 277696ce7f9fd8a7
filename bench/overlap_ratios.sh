#!/usr/bin/env bash
# Benchmark (not a test): runs the demo config on 4 ranks and records, from that one run, the
# ratios T_flash / T_lb (how close Flash-Overlap gets to perfect overlap) and
# T_baseline / T_flash (its speedup), side by side with every other strategy's.
#
#   bench/demo_ratios.sh [FOBENCH] [extra fobench run arguments]
# Writes results/bench-demo-<time>.h5 and a .ratios.json beside it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
shift || true

out="results/bench-demo-$(date +%Y%m%d-%H%M%S).h5"
mkdir -p results
BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh "${NP:-4}" -c bench_configs/demo.yaml -o "$out" "$@"
"$fobench" report "$out" --format json > "${out%.h5}.report.json"

python3 - "${out%.h5}.report.json" "${out%.h5}.ratios.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
cases = {c["strategy"]: c for c in doc["cases"]}
lb = cases["baseline"]["t_lb_ms"]
base = cases["baseline"]["t_ms"]
rows = {}
print(f"{'strategy':<16}{'T (ms)':>10}{'T / T_lb':>10}{'T_base / T':>12}")
for name, c in cases.items():
    if name in ("compute_only", "comm_only"):
        continue
    rows[name] = {"t_ms": c["t_ms"], "t_over_t_lb": c["t_ms"] / lb, "baseline_over_t": base / c["t_ms"]}
    print(f"{name:<16}{c['t_ms']:>10.3f}{c['t_ms'] / lb:>10.3f}{base / c['t_ms']:>12.3f}")
flash = rows.get("flash")
if flash:
    print(f"\nT_flash / T_lb = {flash['t_over_t_lb']:.3f}   T_baseline / T_flash = {flash['baseline_over_t']:.3f}")
json.dump({"source": sys.argv[1], "t_lb_ms": lb, "strategies": rows}, open(sys.argv[2], "w"), indent=2)
PY
echo "recorded: ${out%.h5}.ratios.json"
