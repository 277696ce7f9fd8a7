#!/usr/bin/env bash
# Runs fobench under mpirun on one workstation.
#
#   jobscripts/local.sh NP [fobench run arguments...]
#   e.g. jobscripts/local.sh 4 -c bench_configs/demo.yaml -o results/mine.h5
#
# With Open MPI it adds --oversubscribe (more ranks than cores is fine for functional runs),
# --bind-to none (each rank has a compute thread and a comm thread; pinning both to one core
# would serialise them) and, as root, --allow-run-as-root. BUILD_DIR picks the build (default
# build; relative to the source tree); MPIRUN the launcher (default mpirun, e.g. mpiexec or a
# full path). Paths in the fobench arguments are relative to the source tree, where this
# script runs. The default backend is auto: cuda where built and a GPU is visible (every rank
# sees every GPU; rank -> GPU by local rank), else cpu. PROGRAM launches another MPI program
# of the build the same way, with the arguments as they are (e.g. PROGRAM=build/bench/fob_comm_bench).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -lt 1 || ! "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: jobscripts/local.sh NP [fobench run arguments...]  (NP: number of ranks)" >&2
  exit 2
fi
np=$1
shift

fobench="${PROGRAM:-${BUILD_DIR:-build}/fobench}"
if [[ ! -x "$fobench" ]]; then
  echo "local.sh: $fobench not found; build it first with scripts/build.sh" >&2
  exit 2
fi
mpirun=${MPIRUN:-mpirun}
if ! command -v "$mpirun" > /dev/null; then
  echo "local.sh: $mpirun not found; install Open MPI (or set MPIRUN to your launcher)" >&2
  exit 2
fi

launch=("$mpirun" -np "$np")
if [[ $("$mpirun" --version 2>/dev/null || true) == *'Open MPI'* ]]; then
  launch+=(--oversubscribe --bind-to none)
  if [[ $EUID -eq 0 ]]; then
    launch+=(--allow-run-as-root)
  fi
fi

if [[ -n "${PROGRAM:-}" ]]; then
  exec "${launch[@]}" "$fobench" "$@"
fi
exec "${launch[@]}" "$fobench" run "$@"
