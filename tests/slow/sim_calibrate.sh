#!/usr/bin/env bash
# The simulator on files of this machine: calibrate a machine file from a measured CPU run,
# simulate the same config with it (every strategy measured is simulated), and the simulated
# file is marked as such. Also: machine files load, bad input is exit 2. How close the
# predictions come to the measurement is a benchmark, bench/sim_accuracy.sh: on a shared
# machine that comparison depends on the neighbours, and a test must not.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
cfg="$scratch/measure.yaml"
cat > "$cfg" <<'YAML'
workload: mlp
batch: 2
seq: 128
hidden: 64
ffn: 256
dtype: fp32
strategies: [baseline, slicing:2, decompose, flash, flash_direct]
iters: 6
rounds: 2
warmup: 1
backend: cpu
link_gbps: 1
link_latency_us: 50
verify: false
YAML

mpirun_np 2 run -c "$cfg" -o "$scratch/measured.h5" > /dev/null 2> "$scratch/run.err" ||
  { cat "$scratch/run.err" >&2; fail "fobench run exited"; }
"$FOBENCH" calibrate "$scratch/measured.h5" -o "$scratch/here.yaml" > "$scratch/fit.md" ||
  { cat "$scratch/fit.md" >&2; fail "calibrate exited $?"; }
"$FOBENCH" sim -c "$cfg" --machine "$scratch/here.yaml" --world 2 -o "$scratch/sim.h5" \
  --format csv > "$scratch/sim.csv" || fail "sim exited $?"
"$FOBENCH" report "$scratch/measured.h5" --format csv > "$scratch/measured.csv" ||
  fail "report exited $?"
"$FOB_PYTHON" - "$scratch/measured.csv" "$scratch/sim.csv" <<'PY' || fail "the tables differ in cases"
import csv, sys
def rows(path):
    return {r["strategy"]: r for r in csv.DictReader(l for l in open(path) if not l.startswith("#"))}
measured, simulated = rows(sys.argv[1]), rows(sys.argv[2])
assert set(measured) == set(simulated), (sorted(measured), sorted(simulated))
assert all(float(r["t_ms"]) > 0 for r in simulated.values()), simulated
PY
"$FOBENCH" report "$scratch/sim.h5" > "$scratch/sim.md"
grep -q "SIMULATED" "$scratch/sim.md" || fail "the simulated report does not say SIMULATED"
"$FOB_PYTHON" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r') as f:
    assert 'simulated' in f['system'].attrs, '/system does not mark the file simulated'
" "$scratch/sim.h5" || fail "the simulated file is not marked"

# Every shipped machine file loads and simulates the paper's MLP at TP 4 and 64.
# (The CPU machine has no bf16: it runs the fp32 form.)
for machine in "$FOB_SOURCE_DIR"/bench_configs/machines/*.yaml; do
  dtype=()
  [[ "$machine" == *cpu* ]] && dtype=(--dtype fp32)
  "$FOBENCH" sim -c "$FOB_SOURCE_DIR/bench_configs/paper_mlp_tp4.yaml" --machine "$machine" \
    --world 4,64 "${dtype[@]}" --format csv > "$scratch/m.csv" || fail "sim with $machine exited $?"
  grep -q "^# simulated: " "$scratch/m.csv" || fail "the csv header does not say simulated"
done

expect_input_error missing_machine "nope.yaml" sim -c "$cfg" --machine "$scratch/nope.yaml"
expect_input_error bad_world "--world" sim -c "$cfg" --machine "$scratch/here.yaml" --world 0
expect_input_error dtype_not_in_machine "fp64" sim -c "$cfg" --machine "$scratch/here.yaml" --dtype fp64
"$FOB_PYTHON" -c "import h5py, sys; h5py.File(sys.argv[1], 'w').create_dataset('x', data=[1])" \
  "$scratch/foreign.h5"
expect_input_error calibrate_foreign "not a fobench" calibrate "$scratch/foreign.h5" \
  -o "$scratch/foreign.yaml"
expect_input_error calibrate_exists "--force" calibrate "$scratch/measured.h5" -o "$scratch/here.yaml"

# The analysis side reads simulated files as it reads measured ones.
"$FOBENCH" report "$scratch/sim.h5" --timeline "$scratch/sim.svg" --trace "$scratch/sim.json" \
  > /dev/null 2>&1 || fail "report on a simulated file exited $?"
grep -q "SIMULATED" "$scratch/sim.svg" || fail "the simulated timeline does not say SIMULATED"
echo "ok: calibrated simulation, machine files and bad input"
