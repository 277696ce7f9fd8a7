#!/usr/bin/env bash
# Builds fobench, then runs the CTest suite (unit, MPI and — where a GPU is present — gpu tests).
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit or scripts/test.sh -R plan.
# Exits with ctest's exit code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}

scripts/build.sh
rc=0
ctest --test-dir "$build_dir" --output-on-failure "$@" || rc=$?
exit "$rc"
