#!/usr/bin/env bash
# The production cuda module and the model's build refuse each other's libraries: NVIDIA's
# module with the model's folder first on LD_LIBRARY_PATH, and the model's module with NVIDIA's,
# each exit 2 from `fobench run --backend cuda`, naming the library and the model, and write no
# results file.
#   refusal.sh MODEL_MODULE MODEL_LIBDIR NVIDIA_LIBDIR
set -euo pipefail
model_module=$1
model_libdir=$2
nvidia_libdir=$3
fobench=${FOBENCH:?}
config=${FOB_SOURCE_DIR:?}/bench_configs/smoke.yaml
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_refused NAME PATTERN ENV...: run --backend cuda under ENV, expect exit 2 and PATTERN.
expect_refused() {
  local name=$1 pattern=$2 rc=0
  shift 2
  env "$@" timeout 120 "$fobench" run -c "$config" --backend cuda -o "$scratch/$name.h5" \
    >"$scratch/$name.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "$name: exit $rc, not 2: $(cat "$scratch/$name.log")"
  grep -qE "$pattern" "$scratch/$name.log" || fail "$name: no '$pattern' in: $(cat "$scratch/$name.log")"
  [[ ! -e $scratch/$name.h5 && ! -e $scratch/$name.h5.partial ]] || fail "$name: wrote a file"
  echo "ok: $name: $(grep -oE "$pattern.{0,80}" "$scratch/$name.log" | sed -n 1p)"
}

expect_refused nvidia_module_on_model "the cuda model's" \
  -u FOB_CUDA_MODULE LD_LIBRARY_PATH="$model_libdir"
# NVIDIA's runtime lacks the model's core, so the loader itself refuses the model's module; were
# it to load, model_guard.cpp would name the runtime that is not the model's.
expect_refused model_module_on_nvidia "undefined symbol: [A-Za-z0-9_]*fobmodel|not the model's" \
  FOB_CUDA_MODULE="$model_module" LD_LIBRARY_PATH="$nvidia_libdir"
