#!/usr/bin/env bash
# `cmake --install` gives a working prefix: the installed fobench runs from it (its library and,
# where built, the cuda module found beside each other), and the headers, configs and machine
# files are there. usage: install_check.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$prefix" > "$prefix.log" 2>&1 ||
  { cat "$prefix.log" >&2; rm -f "$prefix.log"; fail "cmake --install exited"; }
rm -f "$prefix.log"
fob="$prefix/bin/fobench"
[ -x "$fob" ] || fail "no bin/fobench"
lib=$(dirname "$(find "$prefix" -name libfobcore.so -print -quit)")
[[ -n "$lib" && "$lib" != . ]] || fail "no libfobcore.so"
[ -f "$prefix/include/fob/plan.h" ] || fail "no include/fob/plan.h"
configs="$prefix/share/fobench/bench_configs"
[[ -f "$configs/smoke.yaml" && -f "$configs/machines/cpu_shm.yaml" ]] || fail "no configs"
# Runs from the prefix alone: the build tree's libraries out of reach.
env -u LD_LIBRARY_PATH "$fob" --version > "$prefix/version.txt" || fail "--version exited $?"
if [ -f "$build/libfob_cuda.so" ]; then
  [ -f "$lib/libfob_cuda.so" ] || fail "the cuda module is not beside libfobcore.so"
  grep -q "cuda" "$prefix/version.txt" || fail "--version does not name the cuda backend"
fi
used=$(ldd "$fob" | sed -n 's/.*libfobcore.so => \([^ ]*\) .*/\1/p')
[[ -n "$used" && "$(readlink -f "$used")" == "$(readlink -f "$lib/libfobcore.so")" ]] ||
  fail "fobench loads libfobcore.so from '$used', not from $lib"
"$fob" run -c "$configs/smoke.yaml" --world 2 --dry-run > /dev/null || fail "dry run exited $?"
"$fob" sim -c "$configs/smoke.yaml" --machine "$configs/machines/cpu_shm.yaml" --world 2 \
  > /dev/null || fail "sim exited $?"
echo "ok: installed prefix runs ($(head -n 1 "$prefix/version.txt"))"
