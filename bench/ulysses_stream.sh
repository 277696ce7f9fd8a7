#!/usr/bin/env bash
# Benchmark (not a test): Ulysses with the attention streamed over arriving keys (flash_stream)
# against baseline, flash and flash_qs, on an attention-heavy shape (seq = 4 * hidden) and a
# projection-heavy one, at 2 and 4 ranks, each over an emulated link set so that
# T_comm / T_comp is 0.4 (--link-ratio). Prints, from each run, T / T_lb and the speedup over
# baseline per strategy, then the simulator's prediction of each 2-rank run from a machine
# calibrated on it (fobench calibrate, fobench sim, fobench compare).
#
#   bench/ulysses_stream.sh [FOBENCH] [extra run arguments]      (ninja -C build bench-ulysses-stream)
# Writes results/bench-ulysses-stream-<time>-*.h5 and the tables to
# results/bench-ulysses-stream-<time>.md. About two minutes on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
shift || true
stamp="results/bench-ulysses-stream-$(date +%Y%m%d-%H%M%S)"
mkdir -p results
strategies=baseline,flash,flash_qs,flash_stream,flash_stream:2
declare -A shapes=(
  [attention]="--batch 1 --seq 2048 --hidden 512 --heads 8"
  [projection]="--batch 2 --seq 512 --hidden 1024 --heads 8"
)
files=()
for np in 2 4; do
  for kind in attention projection; do
    out="$stamp-$kind-n$np.h5"
    read -r -a shape <<<"${shapes[$kind]}"
    BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh "$np" --workload ulysses "${shape[@]}" \
      --strategies "$strategies" --link-ratio 0.4 -n 12 -w 2 --rounds 3 -o "$out" "$@" \
      > /dev/null 2> "${out%.h5}.log"
    "$fobench" report "$out" --format csv > "${out%.h5}.csv"
    files+=("$out")
  done
done

{
  echo "## flash_stream against the other Ulysses strategies ($(date -u +%Y-%m-%d), $(nproc) cores)"
  echo
  echo "| shape | N | T_comm/T_comp | strategy | T (ms) | T / T_lb | speedup | verified |"
  echo "|---|---:|---:|---|---:|---:|---:|:---:|"
  for f in "${files[@]}"; do
    python3 - "${f%.h5}.csv" "$f" <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
by = {r["strategy"]: r for r in rows}
ratio = float(by["comm_only"]["t_ms"]) / float(by["compute_only"]["t_ms"])
kind = "attention-heavy" if "attention" in sys.argv[2] else "projection-heavy"
for r in rows:
    if r["strategy"] in ("compute_only", "comm_only"):
        continue
    t, lb = float(r["t_ms"]), float(r["t_lb_ms"])
    print(f"| {kind} b{r['batch']} s{r['seq']} d{r['hidden']} h{r['heads']} | {r['world']} | "
          f"{ratio:.2f} | {r['strategy']} | {t:.1f} | {t / lb:.3f} | "
          f"{float(r['speedup']):.2f} | {'pass' if r['verified'] == '1' else 'FAIL'} |")
PY
  done
  echo
  echo "### The simulator against the 2-rank runs"
  echo
  echo "Each shape's machine is calibrated on its own run: --link-ratio gives each run its own"
  echo "emulated link, which one machine file cannot hold for both."
  echo
  for kind in attention projection; do
    read -r -a shape <<<"${shapes[$kind]}"
    "$fobench" calibrate "$stamp-$kind-n2.h5" -o "$stamp-$kind.machine.yaml" > /dev/null 2>&1
    "$fobench" sim --machine "$stamp-$kind.machine.yaml" --world 2 --workload ulysses \
      "${shape[@]}" --dtype fp32 --strategies "$strategies" -o "$stamp-$kind-sim.h5" \
      > /dev/null 2>&1
    # compare exits 1 or 5 on a regression or a wide interval, which a prediction's check is not.
    "$fobench" compare "$stamp-$kind-n2.h5" "$stamp-$kind-sim.h5" | grep -E '^\|' || true
    echo
  done
} | tee "$stamp.md"
