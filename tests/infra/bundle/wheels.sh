#!/usr/bin/env bash
# The CUDA 13 nvidia-* wheels a GPU machine's Python has (NCCL, cuBLAS, CUPTI, the runtime,
# NVTX), for the bundle's stub-driver test (bundle_stub_driver): laid out as pip installs them
# (SITE/nvidia/cu13/lib, SITE/nvidia/nccl/lib, SITE/<wheel>.dist-info), never downloaded at
# build or test time.
#
#   wheels.sh fetch      downloads the wheels into the cache with pip (scripts/deps.sh runs it),
#                        unless the CUDA toolkit holds the very same libraries already
#   wheels.sh layout SITE
#                        lays them out in SITE (empty or missing): from the toolkit where its
#                        dist-info records (a toolkit assembled from these wheels) name files
#                        it has with their recorded sizes, hard-linked (copied across file
#                        systems); else unpacked from the cache. Exit 3 naming what is
#                        missing when neither has a wheel.
#
# Environment: FOB_WHEEL_CACHE (default /var/cache/fobench/wheels), CUDA_HOME (default
# /usr/local/cuda), FOB_PYTHON (default python3).
set -euo pipefail

CACHE=${FOB_WHEEL_CACHE:-/var/cache/fobench/wheels}
TOOLKIT=${CUDA_HOME:-/usr/local/cuda}
PYTHON=${FOB_PYTHON:-python3}
# Distribution (as in its .dist-info and .whl names) and pip requirement of each wheel.
WHEELS=(
  "nvidia_nccl_cu13 nvidia-nccl-cu13"
  "nvidia_cublas nvidia-cublas>=13,<14"
  "nvidia_cuda_cupti nvidia-cuda-cupti>=13,<14"
  "nvidia_cuda_runtime nvidia-cuda-runtime>=13,<14"
  "nvidia_nvtx nvidia-nvtx>=13,<14"
)

say() {
  echo "wheels: $*" >&2
}

# toolkit_record DIST: the RECORD of DIST's dist-info in the toolkit, if it has one.
toolkit_record() {
  local record
  for record in "$TOOLKIT"/dist-info/"$1"-[0-9]*.dist-info/RECORD \
    "$TOOLKIT"/"$1"-[0-9]*.dist-info/RECORD; do
    if [[ -f "$record" ]]; then
      echo "$record"
      return 0
    fi
  done
  return 1
}

# toolkit_file NAME: where the toolkit keeps the library NAME.
toolkit_file() {
  local dir
  for dir in lib64 lib targets/x86_64-linux/lib extras/CUPTI/lib64; do
    if [[ -f "$TOOLKIT/$dir/$1" ]]; then
      echo "$TOOLKIT/$dir/$1"
      return 0
    fi
  done
  return 1
}

# toolkit_files DIST: "TOOLKIT-FILE<tab>WHEEL-PATH" for each library DIST's dist-info in the
# toolkit records; fails unless the toolkit has each one, at its recorded size.
toolkit_files() {
  local record path size file n=0
  record=$(toolkit_record "$1") || return 1
  while IFS=, read -r path _ size; do
    size=${size%$'\r'}  # RECORD is a CSV file, its lines may end in CR LF
    [[ $path == nvidia/*/lib/*.so* ]] || continue
    file=$(toolkit_file "$(basename "$path")") || return 1
    [[ $(stat -c %s "$file") == "$size" ]] || return 1
    printf '%s\t%s\n' "$file" "$path"
    n=$((n + 1))
  done <"$record"
  ((n > 0))
}

# from_toolkit DIST SITE: DIST's libraries and dist-info laid out in SITE from the toolkit.
from_toolkit() {
  local files file path
  files=$(toolkit_files "$1") || return 1
  while IFS=$'\t' read -r file path; do
    mkdir -p "$(dirname "$2/$path")"
    ln "$file" "$2/$path" 2>/dev/null || cp "$file" "$2/$path"
  done <<<"$files"
  cp -r "$(dirname "$(toolkit_record "$1")")" "$2/"
}

# cached DIST: the newest wheel of DIST in the cache.
cached() {
  local whl
  whl=$(find "$CACHE" -maxdepth 1 -name "$1-[0-9]*.whl" 2>/dev/null | sort -V | tail -n1)
  [[ -n "$whl" ]] && echo "$whl"
}

layout() {
  local site=$1 entry dist whl
  local -a missing=()
  mkdir -p "$site"
  [[ -z "$(ls -A "$site")" ]] || { say "$site is not empty"; return 2; }
  for entry in "${WHEELS[@]}"; do
    dist=${entry%% *}
    if from_toolkit "$dist" "$site"; then
      say "$dist: from the toolkit $TOOLKIT (the same files its dist-info records)"
    elif whl=$(cached "$dist"); then
      "$PYTHON" -m zipfile -e "$whl" "$site" || { say "cannot unpack $whl"; return 2; }
      say "$dist: unpacked $whl"
    else
      missing+=("$dist")
    fi
  done
  if ((${#missing[@]} > 0)); then
    say "no wheel of ${missing[*]} in $CACHE, and the toolkit $TOOLKIT does not hold them" \
      "(scripts/deps.sh fetches them as root)"
    return 3
  fi
}

fetch() {
  local entry dist
  local -a wanted=()
  for entry in "${WHEELS[@]}"; do
    dist=${entry%% *}
    if toolkit_files "$dist" >/dev/null; then continue; fi
    if cached "$dist" >/dev/null; then continue; fi
    wanted+=("${entry#* }")
  done
  if ((${#wanted[@]} == 0)); then
    say "every wheel is in $CACHE or the toolkit $TOOLKIT"
    return 0
  fi
  if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    say "no pip for $PYTHON: cannot fetch ${wanted[*]}"
    return 1
  fi
  mkdir -p "$CACHE"
  say "downloading ${wanted[*]} into $CACHE"
  "$PYTHON" -m pip download --no-deps --only-binary=:all: -d "$CACHE" "${wanted[@]}"
}

case ${1:-} in
  fetch) fetch ;;
  layout)
    [[ $# == 2 ]] || { echo "usage: $0 layout SITE" >&2 && exit 2; }
    layout "$2"
    ;;
  *)
    echo "usage: $0 fetch | layout SITE" >&2
    exit 2
    ;;
esac
