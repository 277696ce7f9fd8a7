#!/usr/bin/env bash
# bench_configs/interconnect_cpu.yaml, reduced to six sizes (8 KiB to 8 MiB gathered) and a
# few iterations, runs at 2 ranks over the machine's own MPI path, and `fobench calibrate`
# fits a link with a positive latency and a positive, finite bandwidth from it. Only those
# properties: the values themselves depend on the machine and its neighbours.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
shipped="$FOB_SOURCE_DIR/bench_configs/interconnect_cpu.yaml"
cfg="$scratch/interconnect_cpu_reduced.yaml"
# The shipped file with its sweep, strategies and iteration counts replaced; every other key as
# shipped. Three sizes are mostly latency, so that one whose iterations nearly all waited for the
# scheduler still leaves the latency measured.
sizes='[16, 32, 64, 256, 2048, 16384]'
sed -e "s/^seq: .*/seq: $sizes/" -e 's/^iters: .*/iters: 40/' -e 's/^rounds: .*/rounds: 2/' \
  -e 's/^warmup: .*/warmup: 1/' -e 's/^strategies: .*/strategies: [baseline]/' "$shipped" > "$cfg"
for key in "seq: $sizes" 'iters: 40' 'rounds: 2' 'warmup: 1' 'strategies: [baseline]' \
  'link_gbps: 0' 'link_latency_us: 0' 'backend: cpu'; do
  grep -qxF "$key" "$cfg" || fail "the reduced config lacks '$key': did the shipped file change?"
done

mpirun_np 2 run -c "$cfg" -o "$scratch/ic.h5" > "$scratch/run.md" 2> "$scratch/run.err" ||
  { cat "$scratch/run.err" >&2; fail "fobench run exited"; }
grep -q "link: not emulated" "$scratch/run.md" || fail "the run's link was emulated"
"$FOBENCH" calibrate "$scratch/ic.h5" -o "$scratch/machine.yaml" > "$scratch/fit.md" \
  2> "$scratch/fit.err" || { cat "$scratch/fit.md" "$scratch/fit.err" >&2; fail "calibrate exited"; }
"$FOB_PYTHON" - "$scratch/machine.yaml" <<'PY' || { cat "$scratch/fit.md" >&2; fail "the link"; }
import math, re, sys
text = open(sys.argv[1]).read()
links = re.findall(r"\{name: \"shm\", latency_us: ([^,]+), gbytes_per_s: ([^}]+)\}", text)
assert len(links) == 1, "expected one link 'shm' in the machine file:\n" + text
latency_us, gbytes_per_s = (float(v) for v in links[0])
assert latency_us > 0, f"latency {latency_us} us is not positive"
assert math.isfinite(gbytes_per_s) and gbytes_per_s > 0, f"bandwidth {gbytes_per_s} GB/s"
print(f"ok: fitted link shm: latency {latency_us:.3g} us, {gbytes_per_s:.3g} GB/s")
PY
grep -q "6 point(s) of comm_only collectives" "$scratch/fit.md" ||
  { cat "$scratch/fit.md" >&2; fail "the link was not fitted from the six comm_only sizes"; }
echo "ok: the CPU interconnect sweep calibrates a link with latency > 0"
