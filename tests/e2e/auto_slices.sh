#!/usr/bin/env bash
# --auto-slices: slicing and flash cases are run with the count a short sweep found fastest, and
# the file records what was tried and chosen.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
out="$scratch/auto.h5"
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline,slicing,flash \
  --auto-slices -n 3 -o "$out" > /dev/null 2> "$scratch/err" || fail "run exited $?"
"$FOB_PYTHON" - "$out" <<'PY'
import re
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    tuned = 0
    for cid, g in f["cases"].items():
        a = g.attrs
        name = a["strategy"].split(":")[0]
        if name in ("slicing", "flash"):
            note = a["auto_slices"]
            tried = re.findall(name + r":(\d+) ([0-9.]+) ms", note)
            assert len(tried) >= 3, note
            chosen = min(tried, key=lambda t: float(t[1]))[0]
            assert note.endswith("chose " + a["strategy"]), note
            assert a["strategy"] == f"{name}:{chosen}", (a["strategy"], note)
            assert int(a["verified"]) == 1
            tuned += 1
        else:
            assert "auto_slices" not in a
    assert tuned == 2, tuned
print("ok: slicing and flash tuned, choices recorded")
PY

# A resumed --auto-slices run measures nothing twice: rank 0 stops itself as it is about to
# write the last case (flash), the run is killed, and the resume tunes and runs flash alone,
# although slicing's case in the journal holds the count it chose, not the config's `slicing`.
args=(-c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline,slicing,flash
  --auto-slices -n 4 -w 1 --rounds 1)
cut="$scratch/cut.h5"
FOB_TEST_STOP="0:writing case 0004" "$MPIEXEC" -x FOB_TEST_STOP -np 2 --oversubscribe \
  --bind-to none "$FOBENCH" run "${args[@]}" -o "$cut" > /dev/null 2> "$scratch/cut.err" &
pid=$!
for _ in $(seq 1 600); do
  ps -eo stat=,args= | grep -q "^T.*fobench run .*$cut" && break
  sleep 0.1
done
pkill -KILL -f -- "fobench run .*$cut" || fail "no stopped rank to kill"
wait "$pid" || true
kept=$("$FOBENCH" report "$cut.partial" --format csv | grep -v '^#' | tail -n +2 | cut -d, -f1)
[ "$(echo $kept)" = "0000 0001 0002 0003" ] || fail "the cut journal holds: $(echo $kept)"
mpirun_np 2 run "${args[@]}" --resume "$cut.partial" > /dev/null 2> "$scratch/resume.err" ||
  { cat "$scratch/resume.err" >&2; fail "the resume exited $?"; }
ran=$(grep -o "case 000[0-9]" "$scratch/resume.err" | sort -u | tr '\n' ' ')
[ "$ran" = "case 0004 " ] || { cat "$scratch/resume.err" >&2; fail "the resume ran: $ran"; }
n=$("$FOBENCH" report "$cut" --format csv | grep -v '^#' | tail -n +2 | wc -l)
[ "$n" = 5 ] || fail "the resumed file holds $n cases, expected 5"
echo "ok: --auto-slices --resume runs only the case the journal lacks"
