#!/usr/bin/env bash
# The rules stated for every function (docs/correctness.md#code-rules-and-how-they-are-checked):
# at most 80 lines long and of cyclomatic complexity at most 20, as lizard counts them, in all
# the code fobench keeps: the C++ and CUDA of src, include, bench and tests, and the Python,
# JavaScript and shell it reads. Prints each function over a limit; exits 77 without lizard
# (lizard.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=lizard.sh
source tests/repo/lizard.sh
rc=0
out=$("${LIZARD[@]}" --length 80 --CCN 20 --warnings_only src include bench tests python scripts jobscripts) ||
  rc=$?
if ((rc != 0)) || [[ -n $out ]]; then
  printf 'FAIL: functions over 80 lines or a cyclomatic complexity of 20:\n%s\n' "$out" >&2
  exit 1
fi
echo "ok: every function in src, include, bench, tests, python, scripts and jobscripts within" \
  "80 lines and CCN 20"
