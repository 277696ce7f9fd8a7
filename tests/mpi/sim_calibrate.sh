#!/usr/bin/env bash
# The simulator against this machine: calibrate a machine file from a measured CPU run,
# simulate the same config with it, and compare each strategy's predicted step time with the
# measured median. Also: simulated files are marked, machine files load, bad input is exit 2.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cfg="$scratch/measure.yaml"
# 60 iterations in 30 rounds: each strategy sees the same stretches of this shared machine's
# drifting speed, two iterations at a time, so the medians compare like with like. The shape
# (b·s = 2048) keeps each step near 30 ms, so thread wake-ups and MPI's own overheads, which no
# per-task model prices, stay small against the GEMMs and transfers.
cat > "$cfg" <<'YAML'
workload: mlp
batch: 4
seq: 512
hidden: 256
ffn: 1024
dtype: fp32
strategies: [baseline, slicing:2, decompose, flash, flash_direct]
iters: 60
rounds: 30
warmup: 2
backend: cpu
link_gbps: 1
link_latency_us: 50
verify: false
YAML

# Measure, calibrate from the measurement, simulate the same config, compare. Returns 10 when a
# strategy's prediction is 15% or more off its measured median (slicing:2: 30%, see below),
# and only then: any other failure is not a matter of accuracy and must not be retried away.
measure_and_predict() {
  rm -f "$scratch/measured.h5" "$scratch/sim.h5" "$scratch/here.yaml"
  mpirun_np 2 run -c "$cfg" -o "$scratch/measured.h5" > /dev/null 2> "$scratch/run.err" ||
    { cat "$scratch/run.err" >&2; fail "fobench run exited"; }
  "$FOBENCH" calibrate "$scratch/measured.h5" -o "$scratch/here.yaml" > "$scratch/fit.md" ||
    { cat "$scratch/fit.md" >&2; fail "calibrate exited $?"; }
  cat "$scratch/fit.md"
  "$FOBENCH" sim -c "$cfg" --machine "$scratch/here.yaml" --world 2 -o "$scratch/sim.h5" \
    --format csv > "$scratch/sim.csv" || fail "sim exited $?"
  "$FOBENCH" report "$scratch/measured.h5" --format csv > "$scratch/measured.csv" ||
    fail "report exited $?"
  "$FOB_PYTHON" - "$scratch/measured.csv" "$scratch/sim.csv" <<'PY'
import csv, sys
def rows(path):
    return {r["strategy"]: r for r in csv.DictReader(l for l in open(path) if not l.startswith("#"))}
measured, simulated = rows(sys.argv[1]), rows(sys.argv[2])
assert set(measured) == set(simulated), (sorted(measured), sorted(simulated))
# slicing:2 is the one known gap: its chunk's transfer shares the rank's time slice with the
# compute thread on an oversubscribed 2-core machine (4 threads), and its MPI copies there are
# slower than the link fit says; the model has no term for that, and measures -14% to -24% on
# this project's machine (docs/DESIGN.md section 9). Every other strategy must be within 15%.
bound = {"slicing:2": 0.30}
over = []
for strategy, m in measured.items():
    t_m, t_s = float(m["t_ms"]), float(simulated[strategy]["t_ms"])
    error = (t_s - t_m) / t_m
    if abs(error) >= bound.get(strategy, 0.15):
        over.append(strategy)
    print(f"{strategy:14s} measured {t_m:8.3f} ms  simulated {t_s:8.3f} ms  {100 * error:+6.1f}%")
print("beyond the bound: " + (", ".join(over) if over else "none"))
sys.exit(10 if over else 0)
PY
}
# The machine is shared: a neighbour's burst during the run moves the measured medians that
# no model of this machine can predict. One more measurement is allowed; both are printed.
rc=0
measure_and_predict || rc=$?
if [ "$rc" = 10 ]; then
  echo "-- beyond the bound; measuring once more"
  rc=0
  measure_and_predict || rc=$?
  [ "$rc" = 10 ] && fail "simulated step times are beyond the bound of the measured medians, twice"
fi
[ "$rc" = 0 ] || fail "comparing the measured and simulated tables exited $rc"
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
