#!/usr/bin/env bash
# Every workload fobench knows has its gpu tests, named after it: gpu_<workload>_nccl_np1 and
# gpu_<workload>_mpi_np2. A workload added without them fails here, on machines without a GPU
# too (where the gpu tests themselves only report skipped).
# usage: names_check.sh BUILD_DIR   (FOBENCH from CTest's environment)
set -euo pipefail
: "${FOBENCH:?FOBENCH must name the fobench binary}"
build=$1

# The list of workloads comes from fobench's own message for a bad one.
message=$("$FOBENCH" run --workload not-a-workload --dry-run 2>&1 || true)
workloads=$(sed -n 's/.*valid: //p' <<<"$message" | tr -d ' ' | tr ',' ' ')
[[ -n "$workloads" ]] || { echo "FAIL: no workload list in: $message" >&2; exit 1; }

# The tests CMake generated, read from its test files: running `ctest -N` in the build under
# test would overwrite the log of the ctest run this check is part of.
listed=$(find "$build" -name CTestTestfile.cmake -exec sed -n 's/^add_test(\[=\[\(gpu_[^]]*\)\]=\].*/\1/p' {} +)
missing=0
for w in $workloads; do
  for name in "gpu_${w}_nccl_np1" "gpu_${w}_mpi_np2"; do
    if ! grep -qx "$name" <<<"$listed"; then
      echo "FAIL: no gpu test $name" >&2
      missing=1
    fi
  done
done
[[ $missing == 0 ]] || exit 1
echo "ok: gpu tests for $(wc -w <<<"$workloads") workloads: $workloads"
