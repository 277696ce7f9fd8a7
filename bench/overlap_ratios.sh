#!/usr/bin/env bash
# Benchmark (not a test): runs a config (default: the demo, on the demo's ranks) and records, from that
# one run, the ratios T_flash / T_lb (how close Flash-Overlap gets to perfect overlap) and
# T_baseline / T_flash (its speedup), side by side with every other strategy's, per case of
# the config.
#
#   [CONFIG=bench_configs/X.yaml] [NP=N] bench/overlap_ratios.sh [FOBENCH] [extra run arguments]
# NP defaults to scripts/demo.sh's: one rank per physical core, 2 to 4.
# Writes results/bench-<config>-<time>.h5 and a .ratios.json beside it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
shift || true

config=${CONFIG:-bench_configs/demo.yaml}
name=$(basename "$config" .yaml)
out="results/bench-$name-$(date +%Y%m%d-%H%M%S).h5"
mkdir -p results
# shellcheck source=../scripts/ranks.sh
source scripts/ranks.sh
BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh "${NP:-$(fob_default_ranks)}" -c "$config" \
  -o "$out" "$@"
"$fobench" report "$out" --format json > "${out%.h5}.report.json"

python3 - "${out%.h5}.report.json" "${out%.h5}.ratios.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
shape = ("workload", "batch", "seq", "hidden", "ffn", "heads", "dtype", "world")
points = {}
for c in doc["tables"][0]["rows"]:
    points.setdefault(tuple(c[k] for k in shape), {})[c["strategy"]] = c
out = []
for key, cases in points.items():
    if "baseline" not in cases:
        continue
    lb, base = cases["baseline"]["t_lb_ms"], cases["baseline"]["t_ms"]
    point = dict(zip(shape, key))
    print(" ".join(f"{k}={v}" for k, v in point.items()) + f"   T_lb = {lb:.3f} ms")
    print(f"{'strategy':<16}{'T (ms)':>10}{'T / T_lb':>10}{'T_base / T':>12}")
    rows = {}
    for name, c in cases.items():
        if name in ("compute_only", "comm_only"):
            continue
        rows[name] = {"t_ms": c["t_ms"], "t_over_t_lb": c["t_ms"] / lb,
                      "baseline_over_t": base / c["t_ms"], "verified": c["verified"]}
        print(f"{name:<16}{c['t_ms']:>10.3f}{c['t_ms'] / lb:>10.3f}{base / c['t_ms']:>12.3f}")
    flash = rows.get("flash")
    if flash:
        print(f"T_flash / T_lb = {flash['t_over_t_lb']:.3f}   "
              f"T_baseline / T_flash = {flash['baseline_over_t']:.3f}")
    print()
    out.append({**point, "t_lb_ms": lb, "t_comm_over_t_comp":
                cases["baseline"]["t_comm_ms"] / cases["baseline"]["t_comp_ms"],
                "strategies": rows})
json.dump({"source": sys.argv[1], "points": out}, open(sys.argv[2], "w"), indent=2)
PY
echo "recorded: ${out%.h5}.ratios.json"
