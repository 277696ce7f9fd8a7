#!/usr/bin/env bash
# Every test carries a tier's label (scripts/test.sh): one without would run in no tier, so
# neither the README's test command nor CI would ever run it.
#   tiers_check.sh CTEST BUILD_DIR
set -euo pipefail
ctest=$1 build=$2
untiered=$("$ctest" --test-dir "$build" -N -LE '^(unit|mpi|slow|infra|gpu|cuda_model|fuzz)$' |
  sed -n 's/^ *Test *#[0-9]*: //p')
if [ -n "$untiered" ]; then
  echo "FAIL: tests in no tier (label them unit, mpi, slow, infra, gpu, cuda_model or fuzz):" >&2
  echo "$untiered" >&2
  exit 1
fi
echo "ok: every test is in a tier"
