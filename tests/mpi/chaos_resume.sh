#!/usr/bin/env bash
# Chaos: a sweep in rounds whose ranks are killed (SIGKILL, no chance to flush) at random
# moments, each time resumed from what its journal kept, ends with exactly the cases of one
# uninterrupted run: none lost, none counted twice, every case with all its iterations and
# rounds, and no record of another run. The kills' moments come from a fixed seed, and a later
# attempt waits longer, so the sweep always ends.
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cfg="$scratch/chaos.yaml"
cat > "$cfg" <<'YAML'
workload: [gemm_rs, mlp]
seq: [96, 160]
batch: 1
ffn: 80
hidden: 40
strategies: [flash, slicing, baseline]
iters: 6
warmup: 1
rounds: 3
link_latency_us: 3000
YAML
out="$scratch/chaos.h5"
RANDOM=44
kills=0 resumes=0
for attempt in $(seq 1 40); do
  [ -e "$out" ] && break
  if [ -e "$out.partial" ]; then
    resume=(--resume "$out.partial")
    resumes=$((resumes + 1))
  else
    resume=(-o "$out" --force)
  fi
  "$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run -c "$cfg" "${resume[@]}" \
    > /dev/null 2>> "$scratch/chaos.err" &
  pid=$!
  # 0.3 s to about 1.3 s, and 0.1 s more each attempt.
  sleep "$(printf '0.%03d' $((RANDOM % 1000)))"
  sleep "0.$((2 + attempt / 10))$((attempt % 10))"
  victims=$(pgrep -f -- "fobench run -c $cfg" || true)
  if [ -n "$victims" ]; then
    mapfile -t ranks <<< "$victims"
    kill -KILL "${ranks[$((RANDOM % ${#ranks[@]}))]}" 2> /dev/null && kills=$((kills + 1))
  fi
  wait "$pid" || true
  pkill -KILL -f -- "fobench run -c $cfg" || true
done
[ -e "$out" ] || { tail -20 "$scratch/chaos.err" >&2; fail "the sweep did not finish in 40 attempts"; }
[ "$kills" -ge 3 ] && [ "$resumes" -ge 2 ] ||
  fail "only $kills kill(s) and $resumes resume(s) landed: the sweep ran too fast to test"
echo "ok: finished after $kills kills and $resumes resumes"

"$FOB_PYTHON" - "$out" <<'PY' || fail "the resumed sweep lost or doubled a case"
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    cases = f["cases"]
    assert sorted(cases) == ["%04d" % i for i in range(20)], sorted(cases)
    for cid, g in cases.items():
        a = g.attrs
        assert int(a["iters"]) == 6 and int(a["verified"]) == 1, (cid, dict(a))
        assert g["step_seconds"].shape == (6, 2), (cid, g["step_seconds"].shape)
        assert list(g["round_iters"][()]) == [2, 2, 2], (cid, list(g["round_iters"][()]))
    notes = f["system"].attrs.get("notes", b"")
    notes = notes.decode() if isinstance(notes, bytes) else str(notes)
    assert "another run" not in notes, notes
print("ok: 20 cases, each with its 6 iterations in 3 rounds, none twice")
PY
