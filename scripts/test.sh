#!/usr/bin/env bash
# Builds fobench, then runs a tier of the CTest suite (README.md, "Tests"):
#
#   scripts/test.sh                  the fast tier (labels unit, e2e and repo): every change
#   scripts/test.sh --tier slow      one tier: fast, slow, infra, gpu, cuda_model or fuzz
#   scripts/test.sh --tier slow --tier infra    several, one ctest run each
#   scripts/test.sh --all            every tier, one after another
#   scripts/test.sh --no-build ...   skips the build (a tree built already)
#   scripts/test.sh --labels         prints each tier and the ctest labels it runs, and exits
#
# A test's label is the tests/ folder that declares it (tests/README.md); this table of tiers is
# the one place that groups them, and tests/repo/tiers_check.sh holds the two to each other.
#
# Other arguments go to ctest, within the tier: scripts/test.sh -R plan runs the fast tier's
# tests matching plan; with -L or -LE they choose the tests alone (scripts/test.sh -L unit).
# The fast tier runs FOB_TEST_JOBS tests at a time (default twice the cores: most of its 1800
# tests are short processes, and on a busy machine more of them get more of the cores); the
# other tiers run one at a time, as their timing checks and shared fixtures expect.
# Runs every tier asked for, then exits 0 when each passed, else ctest's first failing code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
all_tiers=(fast slow infra gpu cuda_model fuzz)

label_regex() {
  case $1 in
    fast) echo '^(unit|e2e|repo)$' ;;
    slow | infra | gpu | cuda_model | fuzz) echo "^$1\$" ;;
    *)
      echo "test.sh: unknown tier '$1'; valid: ${all_tiers[*]}" >&2
      exit 2
      ;;
  esac
}

tiers=() ctest_args=() build=1 own_labels=0
while (($#)); do
  case $1 in
    --tier)
      [ $# -ge 2 ] || { echo "test.sh: --tier needs a tier: ${all_tiers[*]}" >&2; exit 2; }
      label_regex "$2" > /dev/null
      tiers+=("$2")
      shift 2
      ;;
    --all) tiers+=("${all_tiers[@]}"); shift ;;
    --no-build) build=0; shift ;;
    --labels)
      for tier in "${all_tiers[@]}"; do echo "$tier $(label_regex "$tier")"; done
      exit 0
      ;;
    *)
      case $1 in -L | -LE | --label-regex | --label-exclude) own_labels=1 ;; esac
      ctest_args+=("$1")
      shift
      ;;
  esac
done
((${#tiers[@]})) || tiers=(fast)

((build == 0)) || scripts/build.sh

rc=0
if ((own_labels)); then
  ctest --test-dir "$build_dir" --output-on-failure "${ctest_args[@]}" || rc=$?
  exit "$rc"
fi
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
for tier in "${tiers[@]}"; do
  echo "== test.sh: tier $tier"
  jobs=1
  [ "$tier" != fast ] || jobs=${FOB_TEST_JOBS:-$((2 * cores))}
  tier_rc=0
  ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -L "$(label_regex "$tier")" \
    ${ctest_args[@]+"${ctest_args[@]}"} || tier_rc=$?
  ((rc != 0 || tier_rc == 0)) || rc=$tier_rc
done
exit "$rc"
