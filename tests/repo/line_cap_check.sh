#!/usr/bin/env bash
# No file fobench keeps is over 600 lines: the C++ and CUDA sources, the scripts (*.sh, *.py,
# *.cmake, *.cmake.in, CMakeLists.txt, .ci/run) and the JavaScript of the browser test. A longer
# one is split along a seam of its own (a sourced helper, a second source file).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
cap=600
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.sh' '*.py' '*.cmake' \
  '*.cmake.in' '*.js' '*CMakeLists.txt' .ci/run 2>/dev/null ||
  find src include tests bench scripts jobscripts python cmake .ci -type f \( -name '*.cpp' \
    -o -name '*.h' -o -name '*.cu' -o -name '*.sh' -o -name '*.py' -o -name '*.cmake' \
    -o -name '*.cmake.in' -o -name '*.js' -o -name CMakeLists.txt -o -path .ci/run \))
long=$(for f in "${files[@]}"; do [[ -f $f ]] && wc -l < "$f" | sed "s|^|$f |"; done |
  awk -v cap="$cap" '$2 > cap {print "  " $1 ": " $2 " lines"}')
if [[ -n $long ]]; then
  printf 'FAIL: files over %d lines:\n%s\n' "$cap" "$long" >&2
  exit 1
fi
echo "ok: ${#files[@]} files of at most $cap lines"
