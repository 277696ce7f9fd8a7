#!/usr/bin/env bash
# Benchmark (not a test): the MoE layer (workload moe, bench_configs/moe_cpu.yaml) under
# expert parallelism. Flash (flash[:m], flash_direct) against baseline and slicing:C at 2 and 4
# ranks, with uniform routing and with skewed routing (--moe-skew), each run's link emulated so
# that T_comm / T_comp is 0.4 (the config's link_ratio). Prints per strategy T / T_lb and the
# speedup over baseline, the rows' doubts (a skewed run names its hot rank there), then the
# simulator's prediction of each 2-rank run from a machine calibrated on it (fobench calibrate,
# fobench sim, fobench compare).
#
#   bench/moe_overlap.sh [FOBENCH] [extra run arguments]      (ninja -C build bench-moe)
# SKEW (default 1.2) sets the skewed runs' Zipf exponent. Writes results/bench-moe-<time>-*.h5
# and the tables to results/bench-moe-<time>.md. About five minutes on 2 cores.
#
# Every case runs in rounds (--rounds): each round runs every strategy once in turn, so a
# stretch of a shared machine running at half speed hits all strategies alike, and each
# round's host speed probe is in the file (report's doubts name a slow round).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
shift || true
skew=${SKEW:-1.2}
stamp="results/bench-moe-$(date +%Y%m%d-%H%M%S)"
mkdir -p results
config=bench_configs/moe_cpu.yaml
strategies=baseline,slicing:2,slicing:4,flash,flash:2,flash:4,flash_direct
files=()
for np in 2 4; do
  for routing in uniform skewed; do
    out="$stamp-$routing-n$np.h5"
    skew_args=()
    [[ $routing == skewed ]] && skew_args=(--moe-skew "$skew")
    BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh "$np" -c "$config" \
      --strategies "$strategies" "${skew_args[@]}" -n 20 -w 2 --rounds 5 -o "$out" "$@" \
      > /dev/null 2> "${out%.h5}.log"
    "$fobench" report "$out" --format csv > "${out%.h5}.csv"
    files+=("$out")
  done
done

{
  echo "## MoE: flash against baseline and slicing ($(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "| routing | N | T_comm/T_comp | strategy | T (ms) | T / T_lb | speedup | verified | doubts |"
  echo "|---|---:|---:|---|---:|---:|---:|:---:|---|"
  for f in "${files[@]}"; do
    python3 - "${f%.h5}.csv" "$f" "$skew" <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
by = {r["strategy"]: r for r in rows}
ratio = float(by["comm_only"]["t_ms"]) / float(by["compute_only"]["t_ms"])
routing = f"skew {sys.argv[3]}" if "skewed" in sys.argv[2] else "uniform"
for r in rows:
    if r["strategy"] in ("compute_only", "comm_only"):
        continue
    t, lb = float(r["t_ms"]), float(r["t_lb_ms"])
    doubts = r.get("doubts", "").replace("|", "/")
    print(f"| {routing} | {r['world']} | {ratio:.2f} | {r['strategy']} | {t:.1f} | "
          f"{t / lb:.3f} | {float(r['speedup']):.2f} | "
          f"{'pass' if r['verified'] == '1' else 'FAIL'} | {doubts} |")
PY
  done
  echo
  echo "### The simulator against the 2-rank runs"
  echo
  echo "Each run's machine is calibrated on that run: --link-ratio gives each run its own"
  echo "emulated link, which one machine file cannot hold for both."
  echo
  for routing in uniform skewed; do
    skew_args=()
    [[ $routing == skewed ]] && skew_args=(--moe-skew "$skew")
    machine="$stamp-$routing.machine.yaml"
    "$fobench" calibrate "$stamp-$routing-n2.h5" -o "$machine" > /dev/null 2>&1
    "$fobench" sim -c "$config" --machine "$machine" --world 2 --strategies "$strategies" \
      "${skew_args[@]}" -o "$stamp-$routing-sim.h5" > /dev/null 2>&1
    # compare exits 1 or 5 on a regression or a wide interval, which a prediction's check is not.
    "$fobench" compare "$stamp-$routing-n2.h5" "$stamp-$routing-sim.h5" | grep -E '^\|' || true
    echo
  done
} | tee "$stamp.md"
