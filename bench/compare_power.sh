#!/usr/bin/env bash
# Benchmark (not a test: it measures and records, it does not pass or fail): the interconnect
# gate as it is meant to be used. Runs of bench_configs/interconnect_cpu.yaml over an emulated
# link, held against each other with `fobench compare` (--gate auto: the config asks for the
# interconnect gate, comm_only's busbw per size deciding): consecutive runs of one setting
# (PASS wanted), the base runs against a link 10% and 25% slower (FAIL wanted), and the same
# again with BUSY processes spinning on the machine the whole time. Writes
# results/bench-compare-power-<time>.md and prints it.
#
#   bench/compare_power.sh [FOBENCH]      (ninja -C build bench-compare-power)
#   PAIRS=10 GBPS=3 BUSY_SETTINGS="0 2" KEEP=/tmp/power bench/compare_power.sh
#
# A run takes about 30 s on an idle 2-core machine, so PAIRS=10 over both load settings is
# some 40 minutes. Counted per pair: the gate's verdict by its exit status (0 PASS, 1 FAIL,
# 5 INCONCLUSIVE, 6 MISSING).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
pairs=${PAIRS:-10}
gbps=${GBPS:-3}
busy_settings=${BUSY_SETTINGS:-"0 2"}
threshold=${THRESHOLD:-5}
# KEEP=DIR keeps the runs and each comparison's report there (a new directory); else they go.
if [ -n "${KEEP:-}" ]; then
  mkdir "$KEEP"
  work=$KEEP
else
  work=$(mktemp -d)
fi
spinners=()
stop_spinners() {
  for p in "${spinners[@]}"; do kill "$p" 2> /dev/null || true; done
  spinners=()
}
trap 'stop_spinners; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mkdir -p results
out="results/bench-compare-power-$(date -u +%Y%m%dT%H%M%SZ).md"

run() { # run FILE SLOWDOWN: the config over a link SLOWDOWN times slower than GBPS
  local g
  g=$(awk -v g="$gbps" -v s="$2" 'BEGIN {printf "%.6g", g / s}')
  BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh 2 -c bench_configs/interconnect_cpu.yaml \
    --link-gbps "$g" --force -o "$1" > /dev/null 2>&1
}

gate() { # gate BASE NEW: compare's exit status (its report kept beside NEW with KEEP)
  local rc=0
  "$fobench" compare "$1" "$2" --threshold "$threshold" > "$2.vs.$(basename "$1").md" 2>&1 ||
    rc=$?
  echo "$rc"
}

# counts RC...: "PASS p, FAIL f, INCONCLUSIVE i, MISSING m" of the exit statuses given
counts() {
  local p=0 f=0 i=0 m=0
  for rc in "$@"; do
    case $rc in
      0) p=$((p + 1)) ;;
      1) f=$((f + 1)) ;;
      5) i=$((i + 1)) ;;
      6) m=$((m + 1)) ;;
    esac
  done
  echo "$p | $f | $i | $m"
}

{
  echo "# fobench compare --gate interconnect: the gate's power"
  echo
  echo "$(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ); bench_configs/interconnect_cpu.yaml"
  echo "at 2 ranks over an emulated $gbps Gbit/s link; threshold $threshold%;"
  echo "command: \`PAIRS=$pairs GBPS=$gbps BUSY_SETTINGS=\"$busy_settings\" bench/compare_power.sh\`"
  echo
  echo "| busy processes | pairs | NEW | PASS | FAIL | INCONCLUSIVE | MISSING |"
  echo "|---|---|---|---|---|---|---|"
} > "$out"

for busy in $busy_settings; do
  mkdir -p "$work/busy$busy"
  for _ in $(seq 1 "$busy"); do
    (while :; do :; done) &
    spinners+=($!)
  done
  dir="$work/busy$busy"
  for i in $(seq 0 "$pairs"); do run "$dir/base$i.h5" 1; done
  same=()
  for i in $(seq 1 "$pairs"); do same+=("$(gate "$dir/base$((i - 1)).h5" "$dir/base$i.h5")"); done
  echo "| $busy | $pairs | the same setting | $(counts "${same[@]}") |" >> "$out"
  for slowdown in 1.10 1.25; do
    slow=()
    for i in $(seq 1 "$pairs"); do
      run "$dir/slow$slowdown-$i.h5" "$slowdown"
      slow+=("$(gate "$dir/base$i.h5" "$dir/slow$slowdown-$i.h5")")
    done
    echo "| $busy | $pairs | a link $slowdown times slower | $(counts "${slow[@]}") |" >> "$out"
  done
  stop_spinners
done
cat "$out"
