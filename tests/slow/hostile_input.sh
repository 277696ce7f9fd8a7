#!/usr/bin/env bash
# Memory the host does not have, paths that cannot take a results file, a gate with nothing to
# compare, a calibration over its own input: each is exit 2 within seconds, naming the culprit,
# with no output file and nothing allocated. Sizes that overflow, integers that wrap, repeated
# keys, sweeps past their bound and a BLAS thread count that would not be applied need no
# launcher: tests/unit/test_hostile_input.cpp checks them in-process.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"

# bad NAME PATTERN ARGS...: expect_bad on one rank, with the smoke config unless ARGS name one.
bad() {
  local name=$1 pattern=$2 config=(-c "$smoke")
  shift 2
  for arg in "$@"; do [ "$arg" != -c ] || config=(); done
  expect_bad "$name" "$pattern" 1 "${config[@]}" "$@"
}

# Within the limits but beyond this host's memory: refused by the memory check, not the kernel.
bad host_memory "memory: rank 0 needs .* GiB of host memory" --batch 65536 --seq 65536 \
  --hidden 1024 --strategies baseline

# Paths: refused before anything runs, also with --force, never with a backtrace.
mkdir -p "$scratch/a_dir"
bad output_dir "is a directory" --force -o "$scratch/a_dir"
bad output_dev "not a regular file" --force -o /dev/full
bad output_proc "cannot create" -o /proc/fobench-results.h5
bad output_proc_dir "cannot create the directory" -o /proc/no/such/dir/r.h5
bad output_sys "cannot create" --force -o /sys/fobench-results.h5

# compare: a gate that compared nothing would pass whatever NEW measured.
mpirun_np 1 run -c "$smoke" --strategies baseline -o "$scratch/a.h5" > /dev/null
mpirun_np 1 run -c "$smoke" --strategies baseline --batch 4 -o "$scratch/b.h5" > /dev/null
expect_input_error compare_nothing_common "nothing to compare" compare "$scratch/a.h5" \
  "$scratch/b.h5"
# calibrate: -o naming one of its inputs would overwrite measurements with YAML.
md5_before=$(md5sum < "$scratch/a.h5")
expect_input_error calibrate_over_input "is one of this command's inputs" calibrate "$scratch/a.h5" \
  -o "$scratch/a.h5" --force
[ "$(md5sum < "$scratch/a.h5")" = "$md5_before" ] || fail "calibrate changed its input"
echo "ok: every hostile input is exit 2"
