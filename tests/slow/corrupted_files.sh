#!/usr/bin/env bash
# Results files with 1 to 8 random bytes changed (a bad disk, a cut transfer, a crafted copy):
# `fobench report` reads each as it was or refuses it with exit 2, within seconds, and never
# dies of a signal or hangs, though HDF5 1.10.8 itself crashes or loops on some of them (the
# reader runs it in a child process, src/results/read_results.cpp). The journal likewise.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"
trials=${FOB_CORRUPT_TRIALS:-150}
"$FOBENCH" run -c "$smoke" -o "$scratch/good.h5" > /dev/null 2>&1 || fail "smoke run"
cp "$FOB_SOURCE_DIR/tests/fuzz/corpus/journal/np2_rounds.partial" "$scratch/good.h5.partial"

for kind in h5 h5.partial; do
  "$FOB_PYTHON" - "$scratch/good.$kind" "$scratch/flipped" "$trials" <<'PY'
import os, random, sys
src, out, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
rng = random.Random(28)
os.makedirs(out, exist_ok=True)
for t in range(trials):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    open(os.path.join(out, "%03d.%s" % (t, src.rsplit("good.", 1)[1])), "wb").write(b)
PY
  declare -A seen=()
  for f in "$scratch"/flipped/*."$kind"; do
    rc=0
    timeout 60 "$FOBENCH" report "$f" --format csv > /dev/null 2> "$scratch/err" || rc=$?
    case "$rc" in
      0 | 2) seen[$rc]=$((${seen[$rc]:-0} + 1)) ;;
      *) cat "$scratch/err" >&2; fail "report of ${f##*/}: exit $rc (a signal or a hang)" ;;
    esac
  done
  echo "ok: $trials $kind files with flipped bytes: ${seen[0]:-0} read, ${seen[2]:-0} refused (exit 2)"
  rm -rf "$scratch/flipped"
  unset seen
done

# What HDF5 does to its reader on some of them, made to happen: the child's death and its hang
# are exit 2 naming the file, the hang within the reader's deadline (10 s for a small file).
rc=0
FOB_TEST_READER=crash timeout 60 "$FOBENCH" report "$scratch/good.h5" > /dev/null \
  2> "$scratch/crash.err" || rc=$?
[ "$rc" = 2 ] || { cat "$scratch/crash.err" >&2; fail "a crashing reader: exit $rc, expected 2"; }
grep -q "the HDF5 library crashed reading it" "$scratch/crash.err" || fail "a crashing reader: message"
rc=0
start=$(date +%s)
FOB_TEST_READER=hang timeout 60 "$FOBENCH" report "$scratch/good.h5" > /dev/null \
  2> "$scratch/hang.err" || rc=$?
[ "$rc" = 2 ] || { cat "$scratch/hang.err" >&2; fail "a hanging reader: exit $rc, expected 2"; }
grep -q "took more than 10 s" "$scratch/hang.err" || fail "a hanging reader: message"
[ $(($(date +%s) - start)) -le 30 ] || fail "a hanging reader was stopped only after 30 s"
echo "ok: a reader that crashes or hangs is exit 2 naming the file: $(head -c 150 "$scratch/hang.err")"
