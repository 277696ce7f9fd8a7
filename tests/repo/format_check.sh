#!/usr/bin/env bash
# Every C++ and CUDA source fobench keeps is as .clang-format lays it out: clang-format
# --dry-run -Werror over src, include, tests and bench (line_cap_check.sh holds their length).
# Exits 77 (skipped) where clang-format is not installed (scripts/deps.sh installs it as root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mapfile -t files < <(find src include tests bench -type f \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) | sort)
command -v clang-format > /dev/null || { echo "clang-format not found: skipped"; exit 77; }
clang-format --dry-run -Werror "${files[@]}"
echo "ok: ${#files[@]} files formatted"
