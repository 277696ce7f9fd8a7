#!/usr/bin/env bash
# Builds fobench and runs the default benchmark: the mlp workload on one rank per physical core,
# 2 to 4 (CPU backend, emulated link, every strategy), as configured in bench_configs/demo.yaml.
# Prints the speedup table and writes results/demo-<date>.h5.
#
#   scripts/demo.sh [extra fobench run arguments, e.g. --iters 50 --link-gbps 25]
# NP=<ranks> sets the rank count (NP=4 on a 2-core machine: ranks take turns on the cores);
# BUILD_DIR the build directory (default build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
# shellcheck source=ranks.sh
source scripts/ranks.sh
# shellcheck source=python.sh
source scripts/python.sh
if [[ -n "${NP:-}" ]]; then
  np=$NP
else
  np=$(fob_default_ranks)
  echo "demo: $np ranks, one per physical core (2 to 4); NP=4 scripts/demo.sh runs four" >&2
fi

# Only what the demo runs: fobench (the CPU backend; the cuda module, the tests and the
# benchmarks are scripts/test.sh's). The build's log goes to stderr, so that stdout holds the
# result table alone (scripts/demo.sh > table.md).
echo "demo: building fobench in $build_dir (the first build takes about a minute and a half on 2 cores)" >&2
FOB_DEPS_OPTIONAL=0 FOB_TARGETS=fobench scripts/build.sh >&2

# An output file given on the command line wins over the default one.
out=""
prev=""
for arg in "$@"; do
  case "$prev" in -o | --output) out=$arg ;; esac
  case "$arg" in --output=*) out=${arg#--output=} ;; -o?*) out=${arg#-o} ;; esac
  prev=$arg
done
args=(-c bench_configs/demo.yaml)
if [[ -z "$out" ]]; then
  mkdir -p results
  out="results/demo-$(date +%Y%m%d-%H%M%S).h5"
  args+=(-o "$out")
fi

rc=0
# The run's own header (version, link, one line per rank: what nccl-tests prints first) goes to
# stderr with the progress, so that stdout is the report alone, from its title on.
BUILD_DIR="$build_dir" jobscripts/local.sh "$np" "${args[@]}" "$@" |
  awk '/^# fobench report$/ { table = 1 } { if (table) print; else print > "/dev/stderr" }' ||
  rc=$?

echo >&2
if [[ -f "$out" ]]; then
  echo "Results: $out" >&2
  echo "Print the report again with: $build_dir/fobench report $out" >&2
  # The Python that can read it: python3 on PATH may be a pyenv or venv one without h5py.
  if py=$(fob_python_with h5py,pandas); then
    printf 'Load it in pandas with: %q python/fobench_pandas.py %q\n' "$py" "$out" >&2
    echo "  (in Python: sys.path.insert(0, 'python'); import fobench_pandas as fp;" \
      "fp.load_summary('$out'), fp.load_steps('$out'))" >&2
  else
    echo "Load it in pandas with python/fobench_pandas.py, once a Python has h5py and pandas" \
      "(Debian: apt-get install python3-h5py python3-pandas)" >&2
  fi
elif [[ -f "$out.partial" ]]; then
  echo "The run did not finish; the cases it completed are in $out.partial" >&2
  echo "Print what it has with: $build_dir/fobench report $out.partial" >&2
fi
exit "$rc"
