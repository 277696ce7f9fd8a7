#!/usr/bin/env bash
# Every reader of a file (report, compare, calibrate, --resume, sim's config and machine file)
# is bounded by what the file really holds: a sparse or oversized file, a FIFO or a journal with
# a record of another run or a damaged one in the middle is answered within 10 s and 2 GiB of
# address space, refused (exit 2) or read with what it left out named, never a hang, a crash or
# memory that grows with what a file only claims. A record that is not the run's never enters
# the finished file.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"
args=(-c "$smoke" --strategies comm_only,compute_only,baseline -n 3 -w 1)

# bounded NAME EXPECTED_RC PATTERN COMMAND...: COMMAND exits EXPECTED_RC within 10 s and 2 GiB
# of address space, with PATTERN on its stderr.
bounded() {
  local name=$1 want=$2 pattern=$3 rc=0
  shift 3
  (ulimit -v 2097152 && timeout 10 "$@") > "$scratch/$name.out" 2> "$scratch/$name.err" || rc=$?
  [ "$rc" = "$want" ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $rc, expected $want"; }
  grep -q -- "$pattern" "$scratch/$name.err" "$scratch/$name.out" ||
    { cat "$scratch/$name.err" >&2; fail "$name: no '$pattern'"; }
  echo "ok: $name: exit $rc"
}

# cut NAME: the journal of a run stopped as it was about to write case 0002 (then killed).
cut() {
  FOB_TEST_STOP="0:writing case 0002" "$FOBENCH" run "${args[@]}" -o "$scratch/$1.h5" \
    > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do
    ps -o stat= -p "$pid" | grep -q T && break
    sleep 0.1
  done
  kill -KILL "$pid"
  wait "$pid" || true
  [ -s "$scratch/$1.h5.partial" ] || fail "$1: no journal"
}

# Sparse and oversized: refused by their size, by every reader.
truncate -s 6G "$scratch/sparse.h5"
truncate -s 10G "$scratch/huge.h5"
cut sparse_journal
truncate -s 6G "$scratch/sparse_journal.h5.partial"
for f in sparse.h5 sparse_journal.h5.partial; do
  bounded "report_$f" 2 "sparse file" "$FOBENCH" report "$scratch/$f"
  bounded "compare_$f" 2 "sparse file" "$FOBENCH" compare "$scratch/$f" "$scratch/$f"
  bounded "calibrate_$f" 2 "sparse file" "$FOBENCH" calibrate "$scratch/$f" -o "$scratch/m.yaml"
done
bounded report_huge 2 "more than the 8589934592 a results file may hold" \
  "$FOBENCH" report "$scratch/huge.h5"
bounded resume_sparse 2 "sparse file" \
  "$FOBENCH" run "${args[@]}" --resume "$scratch/sparse_journal.h5.partial"
mkfifo "$scratch/fifo.h5"
bounded report_fifo 2 "is a FIFO" "$FOBENCH" report "$scratch/fifo.h5"
truncate -s 100M "$scratch/sparse.yaml"
bounded config_sparse 2 "a config may hold" "$FOBENCH" run -c "$scratch/sparse.yaml"
truncate -s 32M "$scratch/machine.yaml"
bounded machine_sparse 2 "sparse file" "$FOBENCH" sim -c "$smoke" --world 2 \
  --machine "$scratch/machine.yaml"
# 50 MB of list items: yaml-cpp would build gigabytes of nodes; counted as it streams, refused.
"$FOB_PYTHON" - "$scratch/items.yaml" <<'PY'
import sys
item = "{m: 1, n: 1, k: 1, efficiency: 0.5},"
with open(sys.argv[1], "w") as f:
    f.write("name: x\nsource: y\ncompute:\n  fp32: {peak_tflops: 1, gemm_efficiency: [")
    f.write(item * (50_000_000 // len(item)))
    f.write("]}\n")
PY
bounded machine_items 2 "the machine file holds more than 400000 values" "$FOBENCH" sim \
  -c "$smoke" --world 2 --machine "$scratch/items.yaml"
[ ! -e "$scratch/m.yaml" ] || fail "a refused calibrate wrote its machine file"

# A record of another run (of the same config) appended to a journal: named with its offset,
# left out, and the resumed file holds this run's cases only.
cut ours
cut theirs
"$FOB_PYTHON" - "$scratch/ours.h5.partial" "$scratch/theirs.h5.partial" <<'PY'
import sys
ours, theirs = sys.argv[1], sys.argv[2]
record = open(theirs, "rb").read()
record = record[record.rfind(b"FOBR"):]
with open(ours, "ab") as f:
    f.write(record)
PY
bounded report_foreign 0 "belongs to another run (run id [0-9a-f]*, this journal's [0-9a-f]*)" \
  "$FOBENCH" report "$scratch/ours.h5.partial"
bounded resume_foreign 0 "belongs to another run" \
  "$FOBENCH" run "${args[@]}" --resume "$scratch/ours.h5.partial"
"$FOB_PYTHON" - "$scratch/ours.h5" "$scratch/theirs.h5.partial" <<'PY' || fail "foreign record kept"
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    run = f.attrs["run_id"]
    run = run.decode() if isinstance(run, bytes) else str(run)
    assert len(run) == 16 and int(run, 16) >= 0, run
    assert sorted(f["cases"]) == ["0000", "0001", "0002"], list(f["cases"])
    notes = f["system"].attrs["notes"]
    notes = notes.decode() if isinstance(notes, bytes) else str(notes)
    assert "belongs to another run" in notes, notes
print("ok: the finished file holds its own run's cases, and says what was left out")
PY

# A damaged record in the middle: left out and named, the records after it kept and resumed.
cut damaged
"$FOB_PYTHON" - "$scratch/damaged.h5.partial" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
first = data.find(b"FOBR", data.find(b"FOBR") + 1)  # case 0000's record, after the header
data[first + 64] ^= 0x10
open(path, "wb").write(data)
PY
bounded report_damaged 0 "is damaged (its checksum does not match) and is left out; the records after it are read" \
  "$FOBENCH" report "$scratch/damaged.h5.partial"
bounded resume_damaged 0 "rewritten without the 1 record(s) left out; the 1 case(s) it holds go on" \
  "$FOBENCH" run "${args[@]}" --resume "$scratch/damaged.h5.partial"
n=$("$FOBENCH" report "$scratch/damaged.h5" --format csv | grep -v '^#' | tail -n +2 | wc -l)
[ "$n" = 3 ] || fail "the resumed damaged journal ended with $n cases, expected 3"
echo "ok: damaged record left out, the ones after it kept, the resume measured the rest"

# A path or value echoed in a message reaches the terminal escaped: no raw escape sequence.
rc=0
"$FOBENCH" report "$scratch/"$'\e[31mred\a' 2> "$scratch/escape.err" || rc=$?
[ "$rc" = 2 ] || fail "a missing file with an escape in its name: exit $rc"
grep -q 'red\\x07' "$scratch/escape.err" || fail "the name is not shown escaped: $(cat -v "$scratch/escape.err")"
! grep -q $'\e' "$scratch/escape.err" || fail "a raw escape reached stderr: $(cat -v "$scratch/escape.err")"
echo "ok: an escape in a path is shown as \\x1b"
