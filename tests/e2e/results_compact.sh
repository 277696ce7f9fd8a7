#!/usr/bin/env bash
# A sweep measured in rounds (each round appended to its case) ends in a results file with no
# space left behind: within 1.3x of what h5repack makes of it, and holding every case's rounds.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
command -v h5repack > /dev/null || fail "h5repack is missing (hdf5-tools; scripts/deps.sh)"
printf 'workload: mlp\nbatch: 1\nhidden: 32\nffn: 32\nseq: [2, 4, 6, 8, 10, 12, 14, 16]\n' \
  > "$scratch/sweep.yaml"
mpirun_np 2 run -c "$scratch/sweep.yaml" --strategies baseline,flash,decompose -n 12 \
  --rounds 4 -o "$scratch/r.h5" > /dev/null 2> "$scratch/run.err" ||
  { cat "$scratch/run.err" >&2; fail "the sweep failed"; }
[ ! -e "$scratch/r.h5.partial" ] || fail "the journal is left after the run finished"
h5repack "$scratch/r.h5" "$scratch/repacked.h5"
size=$(stat -c %s "$scratch/r.h5")
packed=$(stat -c %s "$scratch/repacked.h5")
[ $((size * 10)) -le $((packed * 13)) ] ||
  fail "the results file is $size bytes, h5repack's copy $packed: space left behind"
rounds=$("$FOB_PYTHON" -c '
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(sorted({len(f["cases"][c]["round_iters"]) for c in f["cases"]}))
' "$scratch/r.h5")
[ "$rounds" = "[4]" ] || fail "cases hold rounds $rounds, expected 4 each"
echo "ok: 40 cases in 4 rounds: $size bytes, h5repack $packed ($((size * 100 / packed)) %)"
