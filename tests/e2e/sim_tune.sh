#!/usr/bin/env bash
# `fobench sim --tune` on machines built so that the answer is forced, in closed form:
#   1. launch-bound: every task waits 1 ms to launch and nothing else costs anything, so the
#      plan with the fewest tasks in a row wins: baseline, T = 2 ms (the all-gather's launch,
#      then the GEMM's).
#   2. comm-bound pipeline: GEMMs at 1 GFLOP/s, a 4 MB/s link without latency or launch cost.
#      Flash-Overlap's order leaves only one piece's computation outside the transfers:
#      T(flash:m) = T_comm + T_comp / (N m), least at the largest m, 16 (flash_direct ties).
# Then: the csv, md and json forms agree, -o keeps every candidate, bad input is exit 2 before
# anything is written.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"

# machine NAME SOURCE PEAK_TFLOPS LINK_GBYTES_PER_S LAUNCH_US: a one-link machine file, GEMMs
# at a flat PEAK, no latency.
machine() {
  cat > "$scratch/$1.yaml" <<YAML
name: $1
source: "test: $2"
compute:
  fp32: {peak_tflops: $3, memory_gbytes_per_s: 100000}
links:
  - {name: l, latency_us: 0, gbytes_per_s: $4}
topology: {ranks_per_node: 8, intra_node: l, inter_node: l}
launch_us: {compute: $5, comm: $5}
YAML
}
machine launch "every task waits 1 ms to launch, everything else nearly free" 1000 100000 1000
machine pipe "GEMMs at a flat 1 GFLOP/s, a 4 MB/s link without latency or launch cost" \
  0.001 0.004 0

# ag_gemm at N = 4: X is 1024 x 256 fp32, so each rank sends 3 blocks of 256 KiB: T_comm =
# 786432 B / 4 MB/s = 196.608 ms; its GEMM is 1024 x 256 x 256: T_comp = 134.218 ms.
shape=(--workload ag_gemm --batch 1 --seq 1024 --hidden 256 --ffn 1024 --dtype fp32 --world 4
  --strategies "baseline,slicing,decompose,flash,flash_direct")

# field NAME: the column NAME of the csv's one data row.
field() {
  "$FOB_PYTHON" - "$scratch/tune.csv" "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
assert len(rows) == 1, rows
print(rows[0][sys.argv[2]])
PY
}

"$FOBENCH" sim --tune --machine "$scratch/launch.yaml" "${shape[@]}" --format csv \
  > "$scratch/tune.csv" || fail "sim --tune exited $?"
cat "$scratch/tune.csv"
[ "$(field best)" = baseline ] || fail "launch-bound: best is $(field best), not baseline"
[ "$(field t_ms)" = 2.000 ] || fail "launch-bound: T is $(field t_ms) ms, not 2 launches"
[ "$(field speedup)" = 1.000 ] || fail "launch-bound: speedup $(field speedup)"
echo "ok: launch-bound machine: baseline, 2.000 ms"

# The mixture of experts on the launch-bound machine: baseline's one chain of tasks is the
# shortest, T = 11 ms: the gather, the dispatch, each of 2 local experts' up, GLU and down, the
# combine and the k = 2 weighted sums. Every rank routes other tokens, so every rank is
# simulated; every strategy of the layer is a candidate (16 parameters of slicing, flash and
# flash_direct, and baseline), and the row names the MoE shape.
"$FOBENCH" sim --tune --machine "$scratch/launch.yaml" --workload moe --batch 1 --seq 64 \
  --hidden 32 --experts 4 --top-k 2 --expert-ffn 32 --moe-skew 1.2 --dtype fp32 --world 2 \
  --strategies baseline,slicing,flash,flash_direct --format csv > "$scratch/tune.csv" ||
  fail "moe sim --tune exited $?"
cat "$scratch/tune.csv"
[ "$(field best)" = baseline ] || fail "moe launch-bound: best is $(field best), not baseline"
[ "$(field t_ms)" = 11.000 ] || fail "moe launch-bound: T is $(field t_ms) ms, not 11 launches"
[ "$(field candidates)" = 49 ] || fail "moe: $(field candidates) candidates, not 1 + 3 x 16"
[ "$(field shape)" = "b1 s64 d32 E4 k2 F32 skew1.2 seed1" ] || fail "moe shape: $(field shape)"
echo "ok: moe on the launch-bound machine: baseline, 11.000 ms"
# On the comm-bound pipeline the layer's point-to-point order hides its GEMMs behind the
# exchanges: flash (or flash_direct, the same tasks at 2 ranks) reaches T_lb = T_comm, which
# baseline (T_comp + T_comm) and slicing's chunked all-to-alls (a chunk's GEMMs after the last
# combine) cannot.
"$FOBENCH" sim --tune --machine "$scratch/pipe.yaml" --workload moe --batch 1 --seq 64 \
  --hidden 32 --experts 4 --top-k 2 --expert-ffn 32 --dtype fp32 --world 2 \
  --strategies baseline,slicing,flash,flash_direct --format csv > "$scratch/tune.csv" ||
  fail "moe sim --tune on the pipeline exited $?"
cat "$scratch/tune.csv"
case "$(field best)" in
  flash:* | flash_direct:*) ;;
  *) fail "moe pipeline: best is $(field best), not flash or flash_direct" ;;
esac
[ "$(field t_over_t_lb)" = 1.000 ] || fail "moe pipeline: T / T_lb is $(field t_over_t_lb)"
[ "$(field t_lb_ms)" != "$(field t_baseline_ms)" ] || fail "moe pipeline: nothing to hide"
echo "ok: moe on the pipeline machine: $(field best) at T_lb"

"$FOBENCH" sim --tune --machine "$scratch/pipe.yaml" "${shape[@]}" --format csv \
  -o "$scratch/tune.h5" > "$scratch/tune.csv" || fail "sim --tune -o exited $?"
cat "$scratch/tune.csv"
case "$(field best)" in
  flash:16 | flash_direct:16) ;;
  *) fail "pipeline: best is $(field best), not flash or flash_direct at m = 16" ;;
esac
[ "$(field t_ms)" = 198.705 ] || fail "pipeline: T is $(field t_ms), not 196.608 + 134.218/64"
[ "$(field t_lb_ms)" = 196.608 ] || fail "pipeline: T_lb is $(field t_lb_ms), not T_comm"
[ "$(field t_baseline_ms)" = 330.826 ] || fail "pipeline: baseline $(field t_baseline_ms)"
runner=$(field runner_up)
[ "${runner%%:*}" != "$(field best | cut -d: -f1)" ] || fail "runner-up $runner is the best's"
echo "ok: pipeline machine: $(field best) at $(field t_ms) ms, runner-up $runner"

# -o keeps every candidate: the references, baseline, decompose and 16 of each of slicing,
# flash and flash_direct the case takes, as many as the table counts, plus 2 references.
"$FOBENCH" report "$scratch/tune.h5" --format csv > "$scratch/all.csv" || fail "report exited"
rows=$(grep -vc '^#' "$scratch/all.csv")
[ "$rows" = $(($(field candidates) + 3)) ] ||
  fail "the file holds $((rows - 1)) cases, the table counted $(field candidates) + 2 references"
grep -q '^flash:7,' "$scratch/all.csv" || grep -q ',flash:7,' "$scratch/all.csv" ||
  fail "the file lacks flash:7"
echo "ok: -o kept $((rows - 1)) cases"
# A tune file says so (the picture draws each strategy's fastest parameter from it), and a
# file holding one period of a ring is schema version 2, which a fobench that reads 1 refuses.
"$FOB_PYTHON" - "$scratch/tune.h5" <<'PY' || fail "the tune file's root attributes"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["tuned"] == 1 and f.attrs["version"] == 2, dict(f.attrs)
assert f["cases/0000"].attrs["stored_ranks"] == 1, dict(f["cases/0000"].attrs)
assert f["cases/0000/step_seconds"].shape == (1, 1)
PY
"$FOBENCH" sim --machine "$scratch/pipe.yaml" --workload ag_gemm --batch 1 --seq 1024 \
  --hidden 256 --ffn 1024 --dtype fp32 --world 1 --strategies baseline -o "$scratch/one.h5" \
  > /dev/null || fail "sim --world 1 exited"
"$FOB_PYTHON" - "$scratch/one.h5" <<'PY' || fail "an all-rank sim file is not version 1"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["version"] == 1 and "tuned" not in f.attrs, dict(f.attrs)
PY
# The file holds one period of the ring (1 rank of 4 on these uniform machines): calibrate,
# which fits measurements of each rank, refuses it and says why.
expect_input_error calibrate_quotient "stored_ranks" calibrate "$scratch/tune.h5" \
  -o "$scratch/fit.yaml"

# The markdown and json forms name the same choice.
"$FOBENCH" sim --tune --machine "$scratch/pipe.yaml" "${shape[@]}" > "$scratch/tune.md" ||
  fail "md exited"
grep -q "SIMULATED" "$scratch/tune.md" || fail "the md table does not say it is simulated"
grep -q "| $(field best) | 198.705 |" "$scratch/tune.md" || fail "md names another best"
"$FOBENCH" sim --tune --machine "$scratch/pipe.yaml" "${shape[@]}" --format json \
  > "$scratch/tune.json" || fail "json exited"
"$FOB_PYTHON" - "$scratch/tune.json" "$(field best)" <<'PY' || fail "json disagrees"
import json, sys
doc = json.load(open(sys.argv[1]))
row = doc["tables"][0]["rows"][0]
assert row["best"] == sys.argv[2] and abs(row["t_ms"] - 198.705) < 1e-9, row
assert doc["meta"]["timer"].startswith("simulated"), doc["meta"]
PY
echo "ok: md and json agree"

"$FOBENCH" sim --tune --machine "$scratch/pipe.yaml" "${shape[@]}" --format latex \
  > "$scratch/tune.tex" || fail "latex exited"
grep -qF "$(field best | sed 's/_/\\_/g') & 198.705 &" "$scratch/tune.tex" || fail "latex names another best"
expect_input_error tune_format "valid choices: md, csv, json, latex" sim --tune \
  --machine "$scratch/pipe.yaml" "${shape[@]}" --format xml -o "$scratch/latex.h5"
if [ -e "$scratch/latex.h5" ] || [ -e "$scratch/latex.h5.partial" ]; then
  fail "a rejected --tune wrote a file"
fi
# One node is the default world, and no world passes the simulator's 65536 ranks.
expect_input_error rpn_past_max "ranks-per-node: 70000" sim --machine "$scratch/pipe.yaml" \
  --ranks-per-node 70000 --workload ag_gemm --dtype fp32 -o "$scratch/big.h5"
[ ! -e "$scratch/big.h5.partial" ] || fail "a rejected sim wrote a file"

# Bounded like run. At 4096 ranks a ring's plans hold some 2 m N tasks a rank (flash:16: 131,072),
# and the search took minutes in silence; it is counted and estimated first and refused within
# seconds, naming the count and what to split, before anything is written.
h100="$FOB_SOURCE_DIR/bench_configs/machines/h100_nvlink_ib.yaml"
big=(--machine "$h100" --workload ag_gemm --batch 1 --seq 65536 --hidden 8192)
start=$SECONDS
rc=0
timeout 10 "$FOBENCH" sim --tune "${big[@]}" --world 4096 -o "$scratch/w4096.h5" \
  > /dev/null 2> "$scratch/w4096.err" || rc=$?
[ "$rc" = 2 ] || { cat "$scratch/w4096.err" >&2; fail "sim --tune at 4096 ranks: exit $rc"; }
grep -q "sim --tune: 52 case(s) build and price plans of about [0-9,]* tasks" \
  "$scratch/w4096.err" || fail "the refusal names no count: $(cat "$scratch/w4096.err")"
grep -q "more than the 50,000,000 one sim takes; split it: fewer --world sizes" \
  "$scratch/w4096.err" || fail "the refusal names no ceiling: $(cat "$scratch/w4096.err")"
if [ -e "$scratch/w4096.h5" ] || [ -e "$scratch/w4096.h5.partial" ]; then
  fail "a refused sim wrote a file"
fi
echo "ok: sim --tune at 4096 ranks refused in $((SECONDS - start)) s: $(cat "$scratch/w4096.err")"
# What fits the bound runs, saying how far it is once past 3 s (flash:16 at 2048 ranks: 10 plans
# of 65,538 tasks, some 5 s on a 2-core host).
"$FOBENCH" sim "${big[@]}" --strategies flash:16 --world 2048 --format csv > /dev/null \
  2> "$scratch/progress.err" || fail "sim at 2048 ranks exited $?"
grep -q "^fobench sim: [0-9]* of 3 cases simulated, about [0-9]*% of the estimated work" \
  "$scratch/progress.err" || echo "note: no progress line (done within 3 s): $(cat "$scratch/progress.err")"
echo "ok: $(tail -n 1 "$scratch/progress.err")"

# An -o file is written whole or not at all: a simulation that fails (here out of memory under
# a 600 MB address space) is exit 3 and leaves neither the file nor its journal.
rc=0
(
  ulimit -v 600000
  exec "$FOBENCH" sim --tune --machine "$h100" --workload ag_gemm --batch 1 --seq 32768 \
    --hidden 8192 --world 512 -o "$scratch/oom.h5" --format csv > /dev/null 2> "$scratch/oom.err"
) || rc=$?
[ "$rc" = 3 ] || { cat "$scratch/oom.err" >&2; fail "sim out of memory: exit $rc, expected 3"; }
if [ -e "$scratch/oom.h5" ] || [ -e "$scratch/oom.h5.partial" ]; then
  fail "a failed sim left $(ls "$scratch"/oom.h5*)"
fi
echo "ok: out of memory: $(cat "$scratch/oom.err"), no file left"

# Two simulated files hold one exact iteration per case each: compare says so, once, instead of
# "no case of one matches a case of the other; N matched case(s) could not be compared".
expect_input_error compare_two_sims "BASE and NEW are both simulated" compare "$scratch/one.h5" \
  "$scratch/one.h5"
! grep -q "no case of one matches" "$scratch/compare_two_sims.err" ||
  fail "compare contradicts itself: $(cat "$scratch/compare_two_sims.err")"
echo "PASS"
