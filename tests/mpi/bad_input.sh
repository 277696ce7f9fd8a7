#!/usr/bin/env bash
# Bad input: exit code 2, a message naming the culprit, and no output file.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"

printf 'workload: mlp\nbatch: 2\nbogus_key: 1\n' > "$scratch/unknown_key.yaml"
expect_bad unknown_key "bogus_key" 2 -c "$scratch/unknown_key.yaml"
expect_bad unknown_key_line "unknown_key.yaml:3" 2 -c "$scratch/unknown_key.yaml"
expect_bad unknown_strategy "nope" 2 -c "$smoke" --strategies baseline,nope
# Inputs that are not regular files: a directory ran the defaults, a FIFO blocked for ever.
mkdir -p "$scratch/a_dir"
mkfifo "$scratch/a_fifo"
expect_bad config_dir "is a directory" 1 -c "$scratch/a_dir"
# (A hang here ends at CTest's time limit, a failure too.)
expect_bad config_fifo "is a FIFO" 1 -c "$scratch/a_fifo"
expect_input_error report_fifo "is a FIFO" report "$scratch/a_fifo"
expect_input_error report_dir "is a directory" report "$scratch/a_dir"
expect_input_error sim_machine_fifo "is a FIFO" sim -c "$smoke" --machine "$scratch/a_fifo"
expect_input_error sim_config_dir "is a directory" sim -c "$scratch/a_dir" \
  --machine "$FOB_SOURCE_DIR/bench_configs/machines/cpu_shm.yaml"
# Non-finite and out-of-range doubles: a NaN must not turn emulation off, nor an overflowing
# delay be recorded as emulated without being applied.
expect_bad gbps_nan "link_gbps: nan" 1 -c "$smoke" --link-gbps nan
expect_bad gbps_inf "link_gbps: inf" 1 -c "$smoke" --link-gbps inf
expect_bad gbps_tiny "link_gbps: 1e-300" 1 -c "$smoke" --link-gbps 1e-300
expect_bad latency_huge "link_latency_us: 1e+30" 1 -c "$smoke" --link-latency-us 1e30
expect_bad timeout_inf "timeout: inf" 1 -c "$smoke" --timeout inf
expect_bad timeout_nan "timeout: nan" 1 -c "$smoke" --timeout nan
expect_bad strategy_choices "flash_direct" 2 -c "$smoke" --strategies nope
expect_bad indivisible_tokens "batch\*seq" 3 -c "$smoke" --batch 1 --seq 10
expect_bad too_many_slices "slicing:1000" 2 -c "$smoke" --strategies slicing:1000
expect_bad unreadable_config "cannot read" 2 -c "$scratch/does-not-exist.yaml"
expect_bad bad_dtype "bf16" 2 -c "$smoke" --dtype bf16
expect_bad query_split_without_attn "workload attn, ulysses only" 2 -c "$smoke" --strategies flash_qs
expect_bad heads_vs_world "world size 3" 3 -c "$smoke" --workload attn --hidden 48 --heads 4 \
  --seq 6
expect_bad heads_divide_hidden "heads: 5" 1 -c "$smoke" --workload attn --hidden 48 --heads 5
# Ulysses splits the heads and every sequence across the ranks.
expect_bad ulysses_heads_vs_world "heads: 6 does not divide by the world size 4" 4 -c "$smoke" \
  --workload ulysses --hidden 48 --heads 6 --seq 8
expect_bad ulysses_seq_vs_world "seq: 6 does not divide by the world size 4" 4 -c "$smoke" \
  --workload ulysses --hidden 48 --heads 4 --seq 6 --batch 2
expect_bad heads_not_a_number "heads" 1 -c "$smoke" --workload attn --heads many
expect_bad bad_workload "valid: ag_gemm, gemm_rs, mlp" 1 -c "$smoke" --workload attention
expect_bad unknown_option "--frobnicate" 1 -c "$smoke" --frobnicate
expect_bad nccl_on_cpu "transport: 'nccl'" 1 -c "$smoke" --backend cpu --transport nccl
expect_bad graphs_on_cpu "graphs" 1 -c "$smoke" --backend cpu --graphs
expect_bad comm_sms_on_cpu "comm_sms" 1 -c "$smoke" --backend cpu --comm-sms 8
# Only meaningful where no GPU is visible (CI); on a GPU machine --backend cuda is valid.
if "$FOBENCH" --version | grep -q -e "0 device(s) visible" -e "cuda: not built"; then
  expect_bad cuda_without_device "backend: 'cuda'" 1 -c "$smoke" --backend cuda
fi
printf 'batch: [2\n' > "$scratch/broken.yaml"
expect_bad broken_yaml "not valid YAML" 1 -c "$scratch/broken.yaml"

# An existing results file is never overwritten without --force.
existing="$scratch/existing.h5"
echo "precious" > "$existing"
rc=0
mpirun_np 1 run -c "$smoke" -o "$existing" > /dev/null 2> "$scratch/existing.err" || rc=$?
[ "$rc" = 2 ] || fail "existing output: exit $rc, expected 2"
grep -q -- "--force" "$scratch/existing.err" || fail "existing output: message does not suggest --force"
[ "$(cat "$existing")" = precious ] || fail "existing output was modified"
echo "ok: existing output kept"

# report: not a fobench file, missing file.
rc=0
"$FOBENCH" report "$existing" 2> "$scratch/report.err" || rc=$?
[ "$rc" = 2 ] || fail "report on a non-HDF5 file: exit $rc, expected 2"
rc=0
"$FOBENCH" report "$scratch/missing.h5" 2> "$scratch/report.err" || rc=$?
[ "$rc" = 2 ] || fail "report on a missing file: exit $rc, expected 2"
rc=0
"$FOBENCH" report "$existing" --format xml 2> "$scratch/report.err" || rc=$?
if [ "$rc" != 2 ] || ! grep -q "md, csv, json\|md|csv|json" "$scratch/report.err"; then
  fail "report --format xml: exit $rc or no list of formats"
fi
echo "ok: report rejects bad input"
