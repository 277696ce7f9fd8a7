#!/usr/bin/env bash
# Sizes that overflow, integers that wrap, repeated keys, paths that cannot take a results file,
# a BLAS thread count that would not be applied, memory the host does not have, a gate with
# nothing to compare, a calibration over its own input: each is exit 2 within seconds, naming
# the culprit, with no output file and nothing allocated.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"

# bad NAME PATTERN ARGS...: expect_bad on one rank, with the smoke config unless ARGS name one.
bad() {
  local name=$1 pattern=$2 config=(-c "$smoke")
  shift 2
  for arg in "$@"; do [ "$arg" != -c ] || config=(); done
  expect_bad "$name" "$pattern" 1 "${config[@]}" "$@"
}

# Overflow: each used to abort (bad_alloc), be OOM-killed or wrap to a negative row count.
bad batch_2p32 "batch: 4294967297 is too large" --batch 4294967297
bad batch_2p32_dry "batch: 4294967297 is too large" --batch 4294967297 --dry-run
bad seq_2p32 "seq: 4294967296 is too large" --seq 4294967296
bad batch_20_digits "batch: '99999999999999999999' is not an integer" \
  --batch 99999999999999999999
bad batch_hex "batch: '0x10' is not an integer" --batch 0x10
bad product_overflow "batch x seq x hidden" --batch 2147483647 --seq 2147483647 --dry-run
bad attention_scores "heads x seq x seq (attention scores)" --workload attn --batch 1 \
  --seq 2000000000 --hidden 64 --heads 1 --dry-run
# Within the limits but beyond this host's memory: refused by the memory check, not the kernel.
bad host_memory "memory: rank 0 needs .* GiB of host memory" --batch 65536 --seq 65536 \
  --hidden 1024 --strategies baseline
# One rule for --seed on the command line and in YAML.
bad seed_minus_one "seed: '-1' is not an integer from 0 to 18446744073709551615" --seed -1
bad seed_2p64 "seed: '18446744073709551616' is not an integer" --seed 18446744073709551616
printf 'seed: -1\n' > "$scratch/seed.yaml"
bad seed_yaml "seed.yaml:1: seed: '-1' is not an integer from 0" -c "$scratch/seed.yaml"
# A repeated key would silently lose one of its values.
printf 'workload: mlp\nbatch: 2\nseq: 64\nbatch: 4\n' > "$scratch/dup.yaml"
bad duplicate_key "dup.yaml:4: 'batch' is given twice (first at line 2)" -c "$scratch/dup.yaml"
printf 'cases:\n  - {batch: 2, batch: 4}\n' > "$scratch/dup_case.yaml"
bad duplicate_case_key "'batch' is given twice" -c "$scratch/dup_case.yaml"
# More BLAS threads than the BLAS runs would be recorded but not applied.
bad blas_threads "blas_threads: 100000 but this BLAS runs" --blas-threads 100000

# Sweeps are counted before they are made (at most 100000 cases a run): a million points used to
# be bad_alloc or "out of host memory", a 20 MB list an OOM-killed rank.
# list KEY N: "KEY: [1, 2, ..., N]" on one line.
list() { echo "$1: [$(seq -s ', ' 1 "$2")]"; }
sweep_yaml() {  # sweep_yaml NAME LINES...: an mlp config on the cpu backend with LINES
  local name=$1
  shift
  printf 'workload: mlp\nbackend: cpu\n' > "$scratch/$name.yaml"
  printf '%s\n' "$@" >> "$scratch/$name.yaml"
}
sweep_yaml million "$(list batch 100)" "$(list seq 100)" "$(list hidden 100)"
bad sweep_million "sweep: batch (100 values) x seq (100 values) x hidden (100 values) x \
strategies (7, with the reference modes) = 7000000 cases, more than the 100000 one run takes" \
  -c "$scratch/million.yaml"
# 10000 values (40 KB) x 4 strategies is within the bound: expanded in full, then refused
# because flash_qs applies to attention only, which proves the expansion ran out of nothing.
sweep_yaml ten_thousand "$(list seq 10000)" "strategies: [baseline, flash_qs]"
[ "$(stat -c %s "$scratch/ten_thousand.yaml")" -gt 40000 ] || fail "ten_thousand.yaml too small"
bad sweep_10000_values "strategies: 'flash_qs' applies to workload attn" \
  -c "$scratch/ten_thousand.yaml"
# The edge: 100 x 250 points x 4 strategies = 100000 cases are taken, 100 x 251 are not.
sweep_yaml edge "$(list batch 100)" "$(list seq 250)" "strategies: [baseline, flash_qs]"
bad sweep_edge "strategies: 'flash_qs' applies to workload attn" -c "$scratch/edge.yaml"
sweep_yaml past_edge "$(list batch 100)" "$(list seq 251)" "strategies: [baseline, flash_qs]"
bad sweep_past_edge "= 100400 cases, more than the 100000" -c "$scratch/past_edge.yaml"
# A 20 MB list is refused while it is parsed, before yaml-cpp makes a node of each value.
sweep_yaml twenty_mb "$(list seq 3000000)"
bad sweep_20mb_list "twenty_mb.yaml:3: seq: a list of more than 100000 values" \
  -c "$scratch/twenty_mb.yaml"
# --iters has a bound too: rank 0 keeps every iteration's task times.
bad iters_bound "iters: 1000001 is more than 1000000 timed iterations" --iters 1000001
# A 5 MB strategy name is quoted by its first 80 characters and its length, not echoed whole.
printf 'strategies: [%s]\n' "$(head -c 5000000 /dev/zero | tr '\0' a)" > "$scratch/long_name.yaml"
bad long_strategy_name "(5000000 bytes) is not a strategy" -c "$scratch/long_name.yaml"
[ "$(wc -c < "$scratch/long_strategy_name.err")" -lt 1000 ] || fail "long name echoed whole"

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
