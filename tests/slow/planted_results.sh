#!/usr/bin/env bash
# What a hostile neighbour in a shared results folder plants at the names a run, a simulation
# or a resume writes (NAME.h5, NAME.h5.partial) is never opened through: a symbolic link, a
# FIFO or a hard link there is refused (exit 2 within seconds) or replaced as a name, and the
# file it points at keeps its bytes. A crafted results file is exit 2, never a signal or a hang.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"
plant_victim

# bad_run NAME PATTERN ARGS...: fobench ARGS (no mpirun: one rank) is exit 2 within 30 s naming
# PATTERN, and the victim is unchanged.
bad_run() {
  local name=$1 pattern=$2 rc=0
  shift 2
  timeout 30 "$FOBENCH" "$@" > "$scratch/$name.out" 2> "$scratch/$name.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $rc, expected 2"; }
  grep -q -- "$pattern" "$scratch/$name.err" || {
    cat "$scratch/$name.err" >&2
    fail "$name: message does not name '$pattern'"
  }
  victim_unchanged "$name"
  echo "ok: $name: $(head -n1 "$scratch/$name.err")"
}

# A link at the journal's name, with and without --force; a FIFO there never blocks the run.
ln -s "$victim" "$scratch/a.h5.partial"
bad_run partial_symlink "not a regular file" run -c "$smoke" -o "$scratch/a.h5"
bad_run partial_symlink_force "not a regular file" run -c "$smoke" -o "$scratch/a.h5" --force
mkfifo "$scratch/b.h5.partial"
bad_run partial_fifo "not a regular file" run -c "$smoke" -o "$scratch/b.h5" --force
# A link at the finished file's name: --force replaces files, never what a link points at.
ln -s "$victim" "$scratch/c.h5"
bad_run final_symlink "symbolic link" run -c "$smoke" -o "$scratch/c.h5" --force
bad_run sim_final_symlink "symbolic link" sim -c "$smoke" \
  --machine "$FOB_SOURCE_DIR/bench_configs/machines/cpu_shm.yaml" -o "$scratch/c.h5" --force
# A hard link at the journal's name, --force or not: refused, its other name keeps its bytes.
ln "$victim" "$scratch/d.h5.partial"
bad_run partial_hard_link "hard links" run -c "$smoke" -o "$scratch/d.h5" --force
# --resume never follows a link or appends to a hard-linked file.
ln -s "$victim" "$scratch/e.h5.partial"
bad_run resume_symlink "symbolic link" run -c "$smoke" --resume "$scratch/e.h5.partial"
ln "$victim" "$scratch/f.h5.partial"
bad_run resume_hard_link "link" run -c "$smoke" --resume "$scratch/f.h5.partial"
# Names fobench keeps for itself are not outputs.
bad_run reserved_partial ".partial" run -c "$smoke" -o "$scratch/g.h5.partial" --force
# The config is an input: a run never writes its results over it.
cp "$smoke" "$scratch/config.yaml"
bad_run output_is_config "config.yaml" run -c "$scratch/config.yaml" -o "$scratch/config.yaml" \
  --force
cmp -s "$smoke" "$scratch/config.yaml" || fail "the config was overwritten"

# A path too long for the system is refused before any of its directories is made.
long=$(printf 'd%.0s' $(seq 200))
deep="$scratch/deep"
for _ in $(seq 25); do deep="$deep/$long"; done
bad_run too_long_path "PATH_MAX" run -c "$smoke" -o "$deep/r.h5"
[ ! -e "$scratch/deep" ] || fail "too_long_path: directories were left behind"

# A journal whose resume is refused keeps its bytes; one from another build is refused.
timeout 120 "$FOBENCH" run -c "$smoke" -o "$scratch/h.h5" > /dev/null 2>&1 || fail "smoke run"
"$FOB_PYTHON" - "$scratch/h.h5" "$scratch/crafted.h5" <<'EOF' || fail "crafting with h5py"
import shutil, sys, h5py, numpy as np
src, out = sys.argv[1], sys.argv[2]
shutil.copy(src, out)
with h5py.File(out, "r+") as f:
    case = sorted(f["cases"])[0]
    f["cases"][case].attrs["iters"] = np.arange(12, dtype=np.int64) + 0x4141414141
EOF
bad_run crafted_array_attribute "iters" report "$scratch/crafted.h5"
echo "ok: every planted name refused or replaced as a name"
