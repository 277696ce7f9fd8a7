#!/usr/bin/env bash
# `fobench calibrate` on a cuda run's files (docs/calibration.md#fobench-calibrate), on the cuda model: two
# shapes of ag_gemm in bf16 at 2 ranks over NCCL (compute_only, comm_only, decompose) give a
# machine file with the GPU's SMs and the SMs NCCL took (from the file's hardware facts), the
# wave model's tiles, NCCL's achieved rates per size, the GEMMs that ran on the SMs NCCL left
# fitted apart from the same shapes on the whole GPU, and `fobench sim` prices plans with it.
# The model's times are CPU threads, not a GPU's: what is checked is what the fit reads and
# writes, not how well a wave model describes them.
# shellcheck source=../../common/common.sh disable=SC2154 # common.sh sets scratch
source "$FOB_SOURCE_DIR/tests/common/common.sh"
: "${FOB_CUDA_MODULE:?FOB_CUDA_MODULE must name the cuda module of the model}"
export FOB_CUDA_MODULE FOB_MODEL_FATAL=1

# Eight timed iterations: whether a GEMM ran beside a transfer, on the SMs NCCL left, is the
# model's threads' timing, and three iterations once gave none on a loaded machine.
run() { # run NAME SEQ HIDDEN: one shape's three cases, its file NAME.h5
  timeout 300 "$MPIEXEC" -np 2 --oversubscribe --bind-to none -x FOB_CUDA_MODULE \
    -x FOB_MODEL_FATAL "$FOBENCH" run --backend cuda --workload ag_gemm --dtype bf16 --batch 2 \
    --seq "$2" --hidden "$3" --ffn $(($3 * 2)) --rounds 1 -n 8 -w 1 --comm-sms 16 \
    --strategies compute_only,comm_only,decompose -o "$scratch/$1.h5" >"$scratch/$1.out" \
    2>"$scratch/$1.err" || { cat "$scratch/$1.err" >&2; fail "$1: fobench run failed"; }
}
run small 64 64
run large 256 128

"$FOBENCH" calibrate "$scratch/small.h5" "$scratch/large.h5" -o "$scratch/gpu.yaml" \
  >"$scratch/fit.md" 2>"$scratch/fit.err" || { cat "$scratch/fit.err" >&2; fail "calibrate failed"; }
expect() { # expect PATTERN FILE WHAT
  grep -Eq "$1" "$2" || { cat "$2" >&2; fail "$3"; }
}
expect '^gpu: \{sms: 132, comm_sms: 16, max_split_k: [1248]\}$' "$scratch/gpu.yaml" \
  "the fitted file does not give the GPU's 132 SMs and the 16 NCCL took"
expect '^    gemm_tiles:' "$scratch/gpu.yaml" "the fitted file has no wave model"
! grep -q 'gemm_efficiency:' "$scratch/gpu.yaml" || fail "the wave model came with a table"
expect 'all_gather: \[\[[0-9]+, [0-9.e+-]+\], \[[0-9]+, ' "$scratch/gpu.yaml" \
  "the fitted file has no all-gather rates at two sizes"
# A GEMM launched beside NCCL runs on the 116 SMs NCCL left: where one then ran clear of any
# transfer it is fitted on 116 SMs; where each ran under a transfer (the model threads' timing
# decides which), it is priced on 116 SMs for the contention. Either shows the fit read them.
if ! grep -Eq '\| gemm [0-9x]+ bf16 on 116 SMs \|' "$scratch/fit.md"; then
  expect 'contention = [0-9.]+: the median of [1-9][0-9]* GEMMs. durations beside a transfer over the wave model.s on the SMs NCCL left' \
    "$scratch/fit.md" "no GEMM fitted or priced on the SMs NCCL left (132 - 16)"
fi
expect '\| gemm [0-9x]+ bf16 on 132 SMs \|' "$scratch/fit.md" "no GEMM fitted on the whole GPU"
expect 'note: bf16 wave model from [0-9]+ GEMM shape' "$scratch/fit.md" "no note on the wave model"
echo "ok: calibrate on a cuda run: SMs, comm SMs, tiles and NCCL's rates per size"

"$FOBENCH" sim --machine "$scratch/gpu.yaml" --workload ag_gemm --dtype bf16 --batch 2 \
  --seq 256 --hidden 128 --ffn 256 --world 2,8 --strategies baseline,decompose,flash \
  >"$scratch/sim.md" 2>"$scratch/sim.err" || { cat "$scratch/sim.err" >&2; fail "sim failed"; }
expect '\| decompose \|' "$scratch/sim.md" "sim on the fitted file printed no decompose row"
echo "ok: sim prices plans with the fitted GPU file"
