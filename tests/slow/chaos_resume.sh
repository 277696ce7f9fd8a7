#!/usr/bin/env bash
# Chaos: a sweep in rounds whose ranks are killed (SIGKILL, no chance to flush) at random
# moments, each time resumed from what its journal kept, ends with exactly the cases of one
# uninterrupted run: none lost, none counted twice, every case with all its iterations and
# rounds, and no record of another run. Each attempt lives until its journal grows by a record,
# then a random while more (from a fixed seed) that grows with the attempts, so the sweep ends
# however busy the host.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
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
size() { stat -c %s "$out.partial" 2> /dev/null || echo 0; }
for attempt in $(seq 1 120); do
  [ -e "$out" ] && break
  if [ -e "$out.partial" ]; then
    resume=(--resume "$out.partial")
    resumes=$((resumes + 1))
  else
    resume=(-o "$out" --force)
  fi
  before=$(size)
  "$MPIEXEC" -np 2 --oversubscribe --bind-to none "$FOBENCH" run -c "$cfg" "${resume[@]}" \
    > /dev/null 2>> "$scratch/chaos.err" &
  pid=$!
  # Each attempt gets as far as one more record (however slow the host), then lives a random
  # while more, up to 0.1 s more each attempt: the first attempts are killed soon after a
  # record, and since a case measured in rounds is measured again unless its last round is in,
  # later ones live long enough to finish a group of cases, on a busy host too.
  for _ in $(seq 1 600); do
    [ "$(size)" -gt "$before" ] || ! kill -0 "$pid" 2> /dev/null && break
    sleep 0.1
  done
  sleep "$(awk -v r=$RANDOM -v a="$attempt" 'BEGIN { printf "%.3f", r / 32768 * (0.1 + a / 10) }')"
  victims=$(pgrep -f -- "fobench run -c $cfg" || true)
  if [ -n "$victims" ]; then
    mapfile -t ranks <<< "$victims"
    kill -KILL "${ranks[$((RANDOM % ${#ranks[@]}))]}" 2> /dev/null && kills=$((kills + 1))
  fi
  wait "$pid" || true
  pkill -KILL -f -- "fobench run -c $cfg" || true
done
[ -e "$out" ] || { tail -20 "$scratch/chaos.err" >&2; fail "the sweep did not finish in 120 attempts"; }
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
