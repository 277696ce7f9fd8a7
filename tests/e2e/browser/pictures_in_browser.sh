#!/usr/bin/env bash
# Every kind of picture, for the shape pattern of every shipped config (and the token picture of
# every one with experts), opened in headless Chromium: no two texts overlap, no text leaves the
# canvas, the legend names exactly the marks drawn (tests/e2e/browser/layout_check.js); every
# Chrome trace follows the trace-event format.
#
# The shipped configs are simulated (their shapes and strategies, no run); a --tune file and
# two real runs add what simulation does not draw: the chosen parameter beside each point, and
# measured timelines of ranks that share cores over an emulated link.
# Skipped (exit 77) without Chromium: Debian's chromium, which scripts/deps.sh installs as root.
# shellcheck source-path=SCRIPTDIR source=../../common/common.sh
source "$(dirname "$0")/../../common/common.sh"

chromium=""
for candidate in chromium chromium-browser google-chrome; do
  if command -v "$candidate" > /dev/null 2>&1; then
    chromium=$(command -v "$candidate")
    break
  fi
done
if [ -z "$chromium" ]; then
  echo "SKIP: no headless Chromium (Debian: apt-get install chromium; scripts/deps.sh does)"
  exit 77
fi

machines="$FOB_SOURCE_DIR/bench_configs/machines"
files=()
for config in "$FOB_SOURCE_DIR"/bench_configs/*.yaml; do
  name=$(basename "$config" .yaml)
  machine="$machines/h100_nvlink_ib.yaml"
  grep -q '^backend: *cpu' "$config" && machine="$machines/cpu_shm.yaml"
  "$FOBENCH" sim -c "$config" --machine "$machine" -o "$scratch/$name.h5" > /dev/null \
    2> "$scratch/$name.err" || { cat "$scratch/$name.err" >&2; fail "sim of $name exited"; }
  files+=("$name")
done
"$FOBENCH" sim -c "$FOB_SOURCE_DIR/bench_configs/paper_mlp_tp4.yaml" \
  --machine "$machines/h100_nvlink_ib.yaml" --world 4,8,16 --tune -o "$scratch/tune.h5" \
  > /dev/null 2> "$scratch/tune.err" || { cat "$scratch/tune.err" >&2; fail "sim --tune exited"; }
files+=(tune)
# Four ranks on this machine's cores: where they share cores the timeline shows idle gaps.
mpirun_np 4 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --workload mlp \
  --strategies baseline,slicing:2,flash --link-gbps 2 -n 3 -w 1 -o "$scratch/measured.h5" \
  > /dev/null 2> "$scratch/measured.err" || { cat "$scratch/measured.err" >&2; fail "run exited"; }
sed 's/^seq: .*/seq: [72, 144]/' "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" > "$scratch/sweep.yaml"
mpirun_np 2 run -c "$scratch/sweep.yaml" --strategies baseline,decompose,flash_direct -n 2 -w 1 \
  -o "$scratch/sweep.h5" \
  > /dev/null 2> "$scratch/sweep.err" || { cat "$scratch/sweep.err" >&2; fail "run exited"; }
files+=(measured sweep)

pictures=()
for name in "${files[@]}"; do
  base="$scratch/$name"
  "$FOBENCH" report "$base.h5" --timeline "$base.timeline.svg" --breakdown "$base.breakdown.svg" \
    --speedup "$base.speedup.svg" --trace "$base.trace.json" > /dev/null 2> "$base.report.err" ||
    { cat "$base.report.err" >&2; fail "report of $name exited"; }
  pictures+=("$base.timeline.svg" "$base.breakdown.svg" "$base.speedup.svg" "$base.trace.json")
done
# The token picture of every shipped config with experts.
for config in "$FOB_SOURCE_DIR"/bench_configs/*.yaml; do
  grep -q '^workload: *moe' "$config" || continue
  base="$scratch/$(basename "$config" .yaml)"
  "$FOBENCH" report "$base.h5" --tokens "$base.tokens.svg" > /dev/null 2> "$base.tokens.err" ||
    { cat "$base.tokens.err" >&2; fail "report --tokens of $base exited"; }
  pictures+=("$base.tokens.svg")
done
# A case chosen by its strategy, as a reader of the table would name it.
"$FOBENCH" report "$scratch/measured.h5" --case flash --timeline "$scratch/flash.timeline.svg" \
  > /dev/null 2> "$scratch/flash.err" || { cat "$scratch/flash.err" >&2; fail "--case flash"; }
grep -q 'strategy flash' "$scratch/flash.timeline.svg" || fail "--case flash drew another case"
pictures+=("$scratch/flash.timeline.svg")

"$FOB_PYTHON" "$FOB_SOURCE_DIR/tests/e2e/browser/check_pictures.py" --chromium "$chromium" \
  --scratch "$scratch" "${pictures[@]}"
