#!/usr/bin/env bash
# Checks the dependencies (installing them as root on Debian/Ubuntu), then configures and builds
# fobench with CMake and Ninja in $BUILD_DIR (default: build).
#
#   scripts/build.sh [extra CMake configure arguments, e.g. -DFOB_CUDA=OFF]
#   FOB_TARGETS="fobench" scripts/build.sh    only those targets (default: everything)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}

scripts/deps.sh

# A build directory configured with another generator cannot be reused with -G Ninja.
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
  echo "build: $build_dir was configured with another generator; remove it" \
    "(rm -rf $build_dir) or set BUILD_DIR to another directory" >&2
  exit 2
fi

jobs=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
read -r -a targets <<<"${FOB_TARGETS:-}"
cmake --build "$build_dir" -j"$jobs" ${targets[@]+--target "${targets[@]}"}
