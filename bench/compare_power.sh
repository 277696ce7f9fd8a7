#!/usr/bin/env bash
# Benchmark (not a test: it measures and records, it does not pass or fail): how often
# `fobench compare` raises a false alarm between two runs of the same setting, and how often it
# catches a 10% and a 25% slower emulated link, at the default rounds and at more. Writes
# results/bench-compare-power-<time>.md and prints it.
#
#   bench/compare_power.sh [FOBENCH]      (ninja -C build bench-compare-power)
#   PAIRS=10 ROUND_SETTINGS="5 15" bench/compare_power.sh
#
# Every run is an mlp of b·s = 256, d = f = 512 on 2 ranks over an emulated 1 Gbit/s link
# (baseline and flash, T and the references), so its step is bandwidth-bound and a slower link
# shows in T. A "slower link" takes
# the bandwidth divided and the latency multiplied by 1.10 or 1.25. Pairs compare consecutive runs
# of the base setting (false alarms: any case flagged regressed or improved) and the base runs
# against the slower ones (detections: the run's exit code 1). Inconclusive results are counted
# apart: they are neither alarms nor detections, and say the gate knew it could not tell.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fobench=${1:-build/fobench}
pairs=${PAIRS:-10}
round_settings=${ROUND_SETTINGS:-"5 15"}
gbps=1 latency=20 threshold=${THRESHOLD:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p results
out="results/bench-compare-power-$(date -u +%Y%m%dT%H%M%SZ).md"

run() {  # run FILE ROUNDS SLOWDOWN
  local g l
  g=$(awk -v g=$gbps -v s="$3" 'BEGIN {printf "%.6g", g / s}')
  l=$(awk -v l=$latency -v s="$3" 'BEGIN {printf "%.6g", l * s}')
  BUILD_DIR=$(dirname "$fobench") jobscripts/local.sh 2 -c bench_configs/smoke.yaml \
    --strategies baseline,flash --seq 128 --hidden 512 --ffn 512 --link-gbps "$g" \
    --link-latency-us "$l" -n 30 -w 2 \
    --rounds "$2" --no-verify --force -o "$1" > /dev/null 2>&1
}

verdicts() {  # verdicts BASE NEW: the exit code, then the verdict of every compared case
  local rc=0
  "$fobench" compare "$1" "$2" --threshold "$threshold" --format csv > "$work/c.csv" \
    2> /dev/null || rc=$?
  echo "$rc"
}

{
  echo "# fobench compare: false alarms and detections"
  echo
  echo "$(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ); mlp b2 s128 d512 f512, 2 ranks, emulated"
  echo "link $gbps Gbit/s and $latency us, 30 iterations; threshold $threshold%;"
  echo "command: \`PAIRS=$pairs ROUND_SETTINGS=\"$round_settings\" bench/compare_power.sh\`"
  echo
  echo "| rounds | same-setting pairs | false alarms | inconclusive | 10% slower: detected | inconclusive | 25% slower: detected | inconclusive |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$out"

for rounds in $round_settings; do
  for i in $(seq 0 "$pairs"); do run "$work/base$i.h5" "$rounds" 1; done
  alarms=0 unsure=0
  for i in $(seq 1 "$pairs"); do
    rc=$(verdicts "$work/base$((i - 1)).h5" "$work/base$i.h5")
    # An improvement is an alarm too: the csv's verdicts say so.
    if [ "$rc" = 1 ] || grep -q ',improved,' "$work/c.csv"; then
      alarms=$((alarms + 1))
    elif [ "$rc" = 5 ]; then
      unsure=$((unsure + 1))
    fi
  done
  row="| $rounds | $pairs | $alarms | $unsure |"
  for slowdown in 1.10 1.25; do
    found=0 open=0
    for i in $(seq 1 "$pairs"); do
      run "$work/slow.h5" "$rounds" "$slowdown"
      case $(verdicts "$work/base$i.h5" "$work/slow.h5") in
        1) found=$((found + 1)) ;;
        5) open=$((open + 1)) ;;
      esac
    done
    row="$row $found/$pairs | $open |"
  done
  echo "$row" >> "$out"
done
cat "$out"
