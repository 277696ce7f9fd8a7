#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/README.md) with clang in a build folder of their own
# and runs each for SECONDS (default 60) from a scratch copy of its seed corpus.
#
#   tests/fuzz/run.sh [SECONDS]
#
# FOB_FUZZ_BUILD_DIR: the build folder (default build-fuzz); FOB_FUZZ_TARGETS: which targets
# (default "results journal config"); FOB_FUZZ_BYTES=1: let the results target flip bytes too (finds
# HDF5's own bugs, see README). Exit 0 when no target found anything, 1 when one did (its input
# is saved under BUILD/artifacts/TARGET/ and named in the output), 77 when clang or its libFuzzer
# runtime is missing (CTest reports the test skipped).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds=${1:-60}
build=${FOB_FUZZ_BUILD_DIR:-build-fuzz}
targets=${FOB_FUZZ_TARGETS:-results journal config}
cxx=${FOB_FUZZ_CXX:-clang++}
cc=${FOB_FUZZ_CC:-clang}
if [[ ! "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "fuzz: SECONDS must be a whole number of seconds, not '$seconds'" >&2
  exit 2
fi

# libFuzzer comes with clang's runtime (Debian: libclang-rt-14-dev); without it nothing links.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe/p.cpp"
if ! command -v "$cxx" >/dev/null 2>&1 ||
  ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
  echo "fuzz: skipped: $cxx cannot link -fsanitize=fuzzer (install clang and libclang-rt-14-dev)"
  exit 77
fi

jobs=$(nproc 2>/dev/null || echo 2)
# -O1: the build is most of a short run's time; libFuzzer finds as much at -O1 as at -O3.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DFOB_FUZZ=ON -DFOB_CUDA=OFF \
  -DFOB_BUILD_TESTS=OFF -DFOB_BUILD_BENCHMARKS=OFF >/dev/null
names=()
for target in $targets; do names+=("fob_fuzz_$target"); done
cmake --build "$build" --target "${names[@]}" -j"$jobs"

# Frames that say nothing of where a failure is: sanitizers, allocators, libFuzzer, the C and C++
# runtimes (an uncaught exception aborts through them).
boring='__interceptor_|__asan|__sanitizer|__ubsan|__lsan| in (malloc|calloc|realloc|free|operator new|operator delete)|fuzzer::|libc\.so|sysdeps/|libstdc\+\+|libgcc_s'

# Replays each input a FOB_FUZZ_BYTES run saved: one whose first telling frame is in libhdf5 is
# HDF5's own (README) and is listed; one that does not fail again died outside the target (HDF5
# opening a flipped image in the mutator saves an empty input); any other is a failure of ours.
classify() {
  local target=$1 dir=$2 input frame ours=0
  for input in "$dir"/crash-* "$dir"/timeout-* "$dir"/oom-* "$dir"/leak-*; do
    [[ -e "$input" && "$input" != *.replay ]] || continue
    if timeout 120 "$build/fob_fuzz_$target" -timeout=25 -rss_limit_mb=2048 "$input" \
      >"$input.replay" 2>&1; then
      echo "fuzz: $target: did not fail again: ${input##*/}"
      continue
    fi
    frame=$(grep -E '^ +#[0-9]+ 0x' "$input.replay" | grep -vE "$boring" | head -1 || true)
    if [[ "$frame" == *libhdf5* ]]; then
      echo "fuzz: $target: HDF5's own: ${input##*/}:${frame#*0x* }"
    else
      echo "fuzz: $target: OURS: $input:${frame#*0x* }"
      ours=1
    fi
  done
  return "$ours"
}

# HDF5 mallocs what a damaged file says; ASan's default is to report a failed malloc as a crash,
# where the C library returns NULL and HDF5 reports an error. Our own allocations go through
# operator new, which ASan still reports when it fails.
export ASAN_OPTIONS="allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
status=0
for target in $targets; do
  corpus="$build/corpus/$target"
  artifacts="$build/artifacts/$target"
  rm -rf "$corpus" "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  cp tests/fuzz/corpus/"$target"/* "$corpus"/
  # The shipped configs, as they are now, seed the config loader.
  [[ "$target" != config ]] || cp bench_configs/*.yaml "$corpus"/
  echo "fuzz: $target for $seconds s"
  # Byte flips reach HDF5's own parser, whose crashes would end the run at the first: in fork
  # mode libFuzzer goes on past them, and classify() sorts what it saved.
  forked=()
  if [[ "${FOB_FUZZ_BYTES:-0}" == 1 && "$target" == results ]]; then
    forked=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  # -timeout: one input taking this long is a hang; -rss_limit_mb (and the malloc limit it
  # sets) catches an allocation the reader should have refused. libFuzzer does not time its
  # mutators, so `timeout` ends a run that overruns.
  rc=0
  timeout --kill-after=10 $((seconds + 120)) "$build/fob_fuzz_$target" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -max_len=262144 -print_final_stats=1 -artifact_prefix="$artifacts/" "${forked[@]}" \
    "$corpus" >"$build/$target.log" 2>&1 || rc=$?
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$build/$target.log" |
    sed "s/^/fuzz: $target: /" || true
  if [[ ${#forked[@]} -gt 0 ]]; then
    classify "$target" "$artifacts" || status=1
  elif ((rc == 86)); then
    # mutation_watch.h: the mutator's HDF5 call on a file it made did not return; the reader
    # never saw the input.
    frame=$(grep -E '^ +#[0-9]+ 0x' "$build/$target.log" | grep -vE "$boring|mutation_watch" |
      head -1 || true)
    echo "fuzz: $target: stopped by a mutation that hung, not by the reader:${frame#*0x* }"
    grep -E "^fuzz: a mutation" "$build/$target.log" | sed "s/^/fuzz: $target: /" || true
  elif ((rc != 0)); then
    # A failure whose first telling frame is in libhdf5 (the results mutator has HDF5 write
    # what it made, and HDF5 1.10.8 has bugs of its own there, README) is listed, not ours.
    frame=$(grep -E '^ +#[0-9]+ 0x' "$build/$target.log" | grep -vE "$boring" | head -1 || true)
    if [[ "$frame" == *libhdf5* ]]; then
      echo "fuzz: $target: stopped by HDF5's own failure, not ours:${frame#*0x* }"
      grep -E "SUMMARY" "$build/$target.log" | sed "s/^/fuzz: $target: /" || true
    else
      status=1
      echo "fuzz: $target FOUND A FAILURE (exit $rc; input saved under $artifacts/):"
      grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==|#[0-9]+ 0x" "$build/$target.log" |
        head -40 || tail -20 "$build/$target.log"
    fi
  fi
done
exit "$status"
