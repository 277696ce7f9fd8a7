#!/usr/bin/env bash
# A sweep (lists in the config) runs every point; interrupted by SIGTERM and resumed with
# --resume, it ends with the same cases as one uninterrupted run.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
cfg="$scratch/sweep.yaml"
cat > "$cfg" <<'YAML'
workload: [mlp, gemm_rs]
batch: 2
seq: [72, 144]
hidden: 33
ffn: 96
strategies: [baseline, flash]
iters: 8
warmup: 1
rounds: 2
link_latency_us: 20000
YAML

# What an uninterrupted run produces: 2 workloads x 2 lengths x 4 cases.
mpirun_np 2 run -c "$cfg" -o "$scratch/whole.h5" > /dev/null 2> "$scratch/whole.err" ||
  fail "uninterrupted sweep exited $?"

# The same sweep, stopped once some cases are complete.
out="$scratch/cut.h5"
"$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run -c "$cfg" -o "$out" \
  > /dev/null 2> "$scratch/cut.err" &
pid=$!
for _ in $(seq 1 600); do
  n=$("$FOBENCH" report "$out.partial" --format csv 2> /dev/null | grep -v '^#' |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "iters") col = i; next }
             $col == 8' | wc -l || true)
  [ "${n:-0}" -ge 5 ] && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid" || true
if [ ! -e "$out.partial" ] || [ -e "$out" ]; then fail "the sweep was not stopped midway"; fi

# A resume with anything that changes what was measured is refused, naming the setting, and
# leaves the file byte for byte as it was (a resumed file holds one setting only).
before=$(md5sum < "$out.partial")
refuse() {  # refuse NAME PATTERN NP ARGS...
  local name=$1 pattern=$2 np=$3 rc=0
  shift 3
  mpirun_np "$np" run -c "$cfg" --resume "$out.partial" "$@" > /dev/null \
    2> "$scratch/$name.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$scratch/$name.err" >&2; fail "$name: resume exited $rc, expected 2"; }
  grep -q -- "$pattern" "$scratch/$name.err" ||
    { cat "$scratch/$name.err" >&2; fail "$name: the message does not name '$pattern'"; }
  [ "$(md5sum < "$out.partial")" = "$before" ] || fail "$name: the refused resume changed the file"
  echo "ok: $name: $(head -n1 "$scratch/$name.err")"
}
refuse link "link emulation" 2 --link-gbps 1
refuse iters "setting 'iters'" 2 --iters 9
refuse seed "setting 'seed'" 2 --seed 7
refuse dtype "setting 'dtype'" 2 --dtype fp64
refuse strategies "setting 'strategies'" 2 --strategies baseline
refuse world "world size" 1
refuse output "give one or the other" 2 -o "$scratch/elsewhere.h5"
if [ -e "$scratch/elsewhere.h5" ] || [ -e "$scratch/elsewhere.h5.partial" ]; then
  fail "a refused resume wrote another file"
fi

# What a run killed while renaming its finished file leaves: the resume names it.
echo half > "$scratch/.cut.h5.Zz9Zz9.tmp"
mpirun_np 2 run -c "$cfg" --resume "$out.partial" > /dev/null 2> "$scratch/resume.err" ||
  { cat "$scratch/resume.err" >&2; fail "resume exited $?"; }
grep -q "^fobench: note: '$scratch/.cut.h5.Zz9Zz9.tmp' (owner [a-z0-9_]*, [0-9]* min old, 5 bytes) is a temporary a run killed while writing '$out' left behind; .* safe to delete$" \
  "$scratch/resume.err" || { cat "$scratch/resume.err" >&2; fail "the stale temporary is not named"; }
if [ ! -e "$out" ] || [ -e "$out.partial" ]; then fail "resume did not finish the file"; fi
grep -q "case 0000" "$scratch/resume.err" && fail "resume ran case 0000 again although it was complete"

"$FOB_PYTHON" - "$scratch/whole.h5" "$out" <<'PY'
import sys
import h5py
def cases(path):
    with h5py.File(path, "r") as f:
        # --resume adds to the file without rewriting /system: the timer stays.
        assert f["system"].attrs["timer"] == "host steady_clock", f["system"].attrs["timer"]
        out = {}
        for cid, g in f["cases"].items():
            a = g.attrs
            out[cid] = (a["workload"], a["strategy"], int(a["seq"]), int(a["iters"]), int(a["verified"]))
            assert g["step_seconds"].shape[0] == int(a["iters"])
        return out
whole, resumed = cases(sys.argv[1]), cases(sys.argv[2])
assert len(whole) == 16, len(whole)
assert whole == resumed, (whole, resumed)
assert all(v[4] == 1 for v in whole.values())
print(f"ok: {len(whole)} cases, resumed run identical to the uninterrupted one")
PY
