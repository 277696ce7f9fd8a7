#!/usr/bin/env bash
# `fobench --version` and every results file name the commit the binary was built from, read at
# build time, with "-dirty" when tracked files had uncommitted changes.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
if ! command -v git > /dev/null || ! git -C "$FOB_SOURCE_DIR" rev-parse HEAD > /dev/null 2>&1; then
  echo "SKIP: $FOB_SOURCE_DIR is not a git checkout"
  exit 77
fi
want=$(git -C "$FOB_SOURCE_DIR" rev-parse --short HEAD)
[ -z "$(git -C "$FOB_SOURCE_DIR" status --porcelain --untracked-files=no)" ] || want="$want-dirty"
got=$("$FOBENCH" --version | sed -n '1s/.*(git \(.*\))$/\1/p')
[ "$got" = "$want" ] || fail "--version says git '$got', the tree is at '$want' (rebuild?)"
mpirun_np 1 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --strategies baseline \
  -o "$scratch/v.h5" > /dev/null
"$FOB_PYTHON" - "$scratch/v.h5" "$want" <<'PY' || fail "the results file names another commit"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    got = f.attrs["git_commit"]
    got = got.decode() if isinstance(got, bytes) else str(got)
    sys.exit(0 if got == sys.argv[2] else 1)
PY
echo "ok: --version and the results file name $want"
