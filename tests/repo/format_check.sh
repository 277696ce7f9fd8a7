#!/usr/bin/env bash
# Every C++ and CUDA source fobench keeps is at most 600 lines and as .clang-format lays it out:
# clang-format --dry-run -Werror over src, include, tests and bench. The format half exits
# 77 (skipped) where clang-format is not installed (scripts/deps.sh installs it as root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mapfile -t files < <(find src include tests bench -type f \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) | sort)
long=$(wc -l "${files[@]}" | awk '$2 != "total" && $1 > 600 {print "  " $2 ": " $1 " lines"}')
if [[ -n $long ]]; then
  printf 'FAIL: source files over 600 lines:\n%s\n' "$long" >&2
  exit 1
fi
command -v clang-format > /dev/null || { echo "clang-format not found: skipped"; exit 77; }
clang-format --dry-run -Werror "${files[@]}"
echo "ok: ${#files[@]} files formatted"
