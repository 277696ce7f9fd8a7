# shellcheck shell=bash
# Shared by the MPI tests: how to launch fobench under mpirun, and a scratch directory.
# Expects FOBENCH, FOB_SOURCE_DIR, FOB_PYTHON and MPIEXEC from CTest's environment.
set -euo pipefail

: "${FOBENCH:?FOBENCH must name the fobench binary}"
: "${FOB_SOURCE_DIR:?FOB_SOURCE_DIR must name the source tree}"
FOB_PYTHON=${FOB_PYTHON:-python3}
MPIEXEC=${MPIEXEC:-mpirun}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# mpirun_np N ARGS...: fobench under mpirun with N ranks. --bind-to none keeps each rank's
# compute and comm threads free to use any core; --oversubscribe allows more ranks than cores.
mpirun_np() {
  local np=$1
  shift
  "$MPIEXEC" -np "$np" --oversubscribe --bind-to none "$FOBENCH" "$@"
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_input_error NAME PATTERN SUBCOMMAND ARGS...: fobench without MPI must exit 2 with
# PATTERN in its message.
expect_input_error() {
  local name=$1 pattern=$2 rc=0
  shift 2
  "$FOBENCH" "$@" > "$scratch/$name.out" 2> "$scratch/$name.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $rc, expected 2"; }
  grep -q -- "$pattern" "$scratch/$name.err" || {
    cat "$scratch/$name.err" >&2
    fail "$name: message does not name '$pattern'"
  }
  echo "ok: $name: $(head -n1 "$scratch/$name.err")"
}

# expect_bad NAME PATTERN NP ARGS...: `fobench run ARGS` under mpirun with NP ranks, bounded to
# 60 s (a hang, or an allocation of an overflowed size, fails too); demands exit 2, PATTERN in
# stderr and no results file. A scratch -o is added unless ARGS give one.
expect_bad() {
  local name=$1 pattern=$2 np=$3 rc=0
  shift 3
  local out="$scratch/$name.h5"
  local output=(-o "$out")
  for arg in "$@"; do [ "$arg" != -o ] || output=(); done
  timeout 60 "$MPIEXEC" -np "$np" --oversubscribe --bind-to none "$FOBENCH" run "$@" \
    "${output[@]}" > "$scratch/$name.out" 2> "$scratch/$name.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $rc, expected 2"; }
  grep -q -- "$pattern" "$scratch/$name.err" || {
    cat "$scratch/$name.err" >&2
    fail "$name: message does not name '$pattern'"
  }
  if [ -e "$out" ] || [ -e "$out.partial" ]; then fail "$name: an output file was written"; fi
  echo "ok: $name: $(grep -m1 'error' "$scratch/$name.err")"
}

# A file that must keep its bytes whatever is planted to point at it: plant_victim sets
# $victim; victim_unchanged NAME fails when its bytes changed.
plant_victim() {
  victim="$scratch/victim"
  printf 'precious results\n' > "$victim"
  victim_sum=$(sha256sum < "$victim")
}
victim_unchanged() {
  [ "$(sha256sum < "$victim")" = "$victim_sum" ] || fail "$1: the planted link's target changed"
}
