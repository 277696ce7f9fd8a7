#!/usr/bin/env bash
# scripts/demo.sh on the tree CTest built: stdout is the report alone (its title first, no build
# or launcher line), stderr carries the build, the run's header and progress and says where the
# results are and how to load them.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
build_dir=$(dirname "$FOBENCH")
out="$scratch/demo.h5"
NP=2 BUILD_DIR="$build_dir" FOB_SKIP_DEPS=1 "$FOB_SOURCE_DIR/scripts/demo.sh" -n 2 -w 1 \
  --rounds 1 -o "$out" > "$scratch/stdout" 2> "$scratch/stderr" ||
  { cat "$scratch/stderr" >&2; fail "demo.sh exited $?"; }
[ -f "$out" ] || fail "demo.sh wrote no $out"
[ "$(head -n1 "$scratch/stdout")" = "# fobench report" ] ||
  fail "stdout does not start with the report's title: $(head -n3 "$scratch/stdout")"
if grep -nE '^\[[0-9]+/[0-9]+\]|ninja|CMake|Rank +[0-9]+ Pid' "$scratch/stdout"; then
  fail "build or launcher lines on stdout"
fi
grep -q '^| ' "$scratch/stdout" || fail "no table on stdout"
grep -q "Rank  *0 Pid" "$scratch/stderr" || fail "the run's rank lines are not on stderr"
grep -q "Results: $out" "$scratch/stderr" || fail "stderr does not say where the results are"
echo "ok: stdout holds the report alone ($(wc -l < "$scratch/stdout") lines)"
