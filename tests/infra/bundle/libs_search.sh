#!/usr/bin/env bash
# The launchers' library search (scripts/bundle/fob-env.sh) on fake directory trees: empty
# files named like the CUDA libraries in fake LD_LIBRARY_PATH, toolkit, wheel, conda and
# system directories, a fake python3 that names fake site-packages, a fake ldconfig. Checks
# the search order, that what is found is printed, that a missing library makes bin/fob-libs
# and a launcher fail naming the library and every place searched, the exported guard (no
# second search or report in the processes a launcher starts), FOB_REQUIRE_CUDA, the driver
# folder of NVIDIA's containers, wheels in venvs no python3 on PATH names, and that a missing
# optional library (CUPTI) is reported but never fatal.
# Needs no build and no bundle: the bundle is made of the templates in scripts/bundle.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
T=$scratch
BUNDLE="$T/my bundle"  # a space in the path, as a user's copy may have
TEMPLATES="$FOB_SOURCE_DIR/scripts/bundle"

# --- a fake bundle: the real launchers, a fake loader and a fake program -------------------
make_bundle() {
  mkdir -p "$BUNDLE"/{bin,lib,libexec}
  cp "$TEMPLATES/fob-env.sh" "$BUNDLE/lib/"
  cp "$TEMPLATES/fob-libs" "$BUNDLE/bin/"
  cp "$TEMPLATES/launcher" "$BUNDLE/bin/fakeprog"
  cp "$TEMPLATES/launcher" "$BUNDLE/bin/plainprog"
  # The loader reports how it was called, then runs the program (a shell script here).
  cat >"$BUNDLE/lib/ld-linux-x86-64.so.2" <<'EOF'
#!/bin/sh
[ "$1" = --library-path ] || { echo "fake loader: no --library-path" >&2; exit 99; }
echo "loader library-path: $2"
[ "$3" = --argv0 ] || { echo "fake loader: no --argv0" >&2; exit 99; }
echo "loader argv0: $4"
prog=$5
shift 5
exec /bin/sh "$prog" "$@"
EOF
  cat >"$BUNDLE/libexec/fakeprog" <<'EOF'
echo "fakeprog args: $*"
echo "fakeprog FOB_BUNDLE_SEARCHED=${FOB_BUNDLE_SEARCHED:-}"
echo "fakeprog FOB_BUNDLE_CUDA_PATH=${FOB_BUNDLE_CUDA_PATH:-}"
echo "fakeprog OPAL_PREFIX=${OPAL_PREFIX:-}"
echo "fakeprog LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
EOF
  cp "$BUNDLE/libexec/fakeprog" "$BUNDLE/libexec/plainprog"
  # fakeprog needs cuBLAS and NCCL directly; plainprog needs nothing (like fobench, whose
  # cuda backend is a module that libfob_cuda.so needs the libraries for).
  printf '%s\n' '# test' 'libexec/fakeprog libcublas.so.13' 'libexec/fakeprog libnccl.so.2' \
    'lib/libfob_cuda.so libcublasLt.so.13' 'optional libcupti.so.13' >"$BUNDLE/lib/cuda-needs.txt"
  chmod -R a+rx "$BUNDLE"
}

# --- fake places the libraries can be ---------------------------------------------------------
LDP="$T/ldpath dir"
CUDAHOME=$T/cudahome
SITE1=$T/site1/site-packages
SITE2=$T/site2/dist-packages
CONDA=$T/conda
SYSROOT=$T/sysroot
FAKEBIN=$T/fakebin      # python3 and ldconfig fakes, and the tools the launchers use
NOPYBIN=$T/nopybin      # the same without python3

make_places() {
  mkdir -p "$LDP" "$CUDAHOME/lib64" "$SITE1/nvidia/cu13/lib" "$SITE1/nvidia/cublas/lib" \
    "$SITE2/nvidia/nccl/lib" "$CONDA/lib" "$SYSROOT/usr/local/cuda/lib64" \
    "$SYSROOT/usr/local/cuda-13.0/lib" "$SYSROOT/usr/local/cuda-12.9/lib64" \
    "$SYSROOT/usr/lib/x86_64-linux-gnu" "$T/cache" \
    "$FAKEBIN" "$NOPYBIN"
  printf '#!/bin/sh\nprintf "%%s\\n" "%s" "%s" "%s/nonexistent"\n' "$SITE1" "$SITE2" "$T" \
    >"$FAKEBIN/python3"
  # shellcheck disable=SC2016 # $1 is the fake's own argument
  printf '#!/bin/sh\n[ "$1" = -p ] || exit 1\necho "1 libs found in cache"\n' >"$FAKEBIN/ldconfig"
  printf '\tlibcuda.so.1 (libc6,x86-64, OS ABI: Linux 3.2.0) => %s/libcuda.so.1\n' "$T/cache" \
    >>"$FAKEBIN/ldconfig.out"
  printf 'exec %s "%s"\n' "$(command -v cat)" "$FAKEBIN/ldconfig.out" >>"$FAKEBIN/ldconfig"
  chmod +x "$FAKEBIN/python3" "$FAKEBIN/ldconfig"
  # The outside commands the launchers use.
  local tool
  for tool in readlink od; do
    ln -s "$(command -v "$tool")" "$FAKEBIN/$tool"
    ln -s "$(command -v "$tool")" "$NOPYBIN/$tool"
  done
}

# put LIB DIR...: an empty file named LIB in each DIR; clear: remove every fake library.
put() {
  local lib=$1 dir
  shift
  for dir in "$@"; do : >"$dir/$lib"; done
}
clear_libs() {
  find "$T" -path "$BUNDLE" -prune -o -name 'lib*.so.*' -type f -print0 | xargs -0 rm -f
}

# in_env [VAR=VALUE...] CMD...: CMD in a clean environment with every fake place configured.
in_env() {
  env -i HOME="$T" PATH="$FAKEBIN" LD_LIBRARY_PATH="$LDP:$T/missing" CUDA_HOME="$CUDAHOME" \
    CONDA_PREFIX="$CONDA" FOB_LIBS_SYSROOT="$SYSROOT" FOB_LIBS_LDCONFIG="$FAKEBIN/ldconfig" "$@"
}

# where LIB [VAR=VALUE...]: the path bin/fob-libs reports for LIB ("" when missing). Its lines
# are "  LIB  PATH[ (-> REAL)] [LABEL]"; paths may hold spaces.
where() {
  local lib=$1
  shift
  { in_env "$@" "$BUNDLE/bin/fob-libs" 2>&1 || true; } |
    sed -n "s/^  $lib  *\(.*\) \[[^]]*\]\$/\1/p" | sed 's/ (-> [^)]*)$//'
}

expect_where() {
  local lib=$1 want=$2 got
  shift 2
  got=$(where "$lib" "$@")
  [[ "$got" == "$want" ]] || fail "$lib: found at '$got', expected '$want' ($*)"
}

make_bundle
make_places

# --- 1. the search order, one place removed at a time ---------------------------------------
lib=libcublas.so.13
places=("$LDP" "$CUDAHOME/lib64" "$SYSROOT/usr/local/cuda/lib64"
  "$SYSROOT/usr/local/cuda-13.0/lib" "$SYSROOT/usr/local/cuda-12.9/lib64"
  "$SITE1/nvidia/cu13/lib" "$SITE1/nvidia/cublas/lib" "$CONDA/lib"
  "$SYSROOT/usr/lib/x86_64-linux-gnu")
put "$lib" "${places[@]}"
for place in "${places[@]}"; do
  expect_where "$lib" "$place/$lib"
  rm "$place/$lib"
done
expect_where "$lib" ""
ok "search order: LD_LIBRARY_PATH, CUDA_HOME, /usr/local/cuda, /usr/local/cuda-* (newest" \
  "first), wheels (nvidia/cu13/lib first), CONDA_PREFIX, system directories"

# CUDA_PATH like CUDA_HOME; the second site-packages directory; ld.so.cache last.
mkdir -p "$T/cudapath/lib64"
put "$lib" "$T/cudapath/lib64"
expect_where "$lib" "$T/cudapath/lib64/$lib" CUDA_PATH="$T/cudapath"
rm "$T/cudapath/lib64/$lib"
put libnccl.so.2 "$SITE2/nvidia/nccl/lib"
expect_where libnccl.so.2 "$SITE2/nvidia/nccl/lib/libnccl.so.2"
put libcuda.so.1 "$T/cache"
expect_where libcuda.so.1 "$T/cache/libcuda.so.1"
put libcuda.so.1 "$SYSROOT/usr/lib/x86_64-linux-gnu"
expect_where libcuda.so.1 "$SYSROOT/usr/lib/x86_64-linux-gnu/libcuda.so.1"
ok "CUDA_PATH, a second site-packages directory, ld.so.cache after the system directories"

# Without python3 the wheels are not searched, and nothing fails for it.
put "$lib" "$SITE1/nvidia/cu13/lib" "$CONDA/lib"
expect_where "$lib" "$CONDA/lib/$lib" PATH="$NOPYBIN"
expect_where "$lib" "$SITE1/nvidia/cu13/lib/$lib"
ok "no python3: the wheels are skipped"

# --- 2. everything found: printed, exit 0, --path in search order -------------------------------
clear_libs
put libcuda.so.1 "$T/cache"
put libcublas.so.13 "$CUDAHOME/lib64"
put libcublasLt.so.13 "$SITE1/nvidia/cu13/lib"
put libnccl.so.2 "$LDP"
out=$(in_env "$BUNDLE/bin/fob-libs") || fail "fob-libs failed with every library present: $out"
for want in "libcuda.so.1 *$T/cache/libcuda.so.1 \[ld.so.cache\]" \
  "libcublas.so.13 *$CUDAHOME/lib64/libcublas.so.13 \[CUDA_HOME\]" \
  "libcublasLt.so.13 *$SITE1/nvidia/cu13/lib/libcublasLt.so.13 \[python3 site-packages\]" \
  "libnccl.so.2 *$LDP/libnccl.so.2 \[LD_LIBRARY_PATH\]"; do
  grep -q "$want" <<<"$out" || fail "fob-libs output lacks '$want':"$'\n'"$out"
done
# The optional CUPTI, missing, is reported as such and does not make fob-libs fail.
grep -q 'libcupti.so.13 *NOT FOUND (optional: kernel-level task times' <<<"$out" ||
  fail "the missing optional CUPTI is not reported as optional:"$'\n'"$out"
[[ $(grep -c . <<<"$out") == 6 ]] || fail "unexpected lines in:"$'\n'"$out"
path=$(in_env "$BUNDLE/bin/fob-libs" --path)
[[ "$path" == "$LDP:$CUDAHOME/lib64:$SITE1/nvidia/cu13/lib:$T/cache" ]] ||
  fail "fob-libs --path: $path"
ok "every library found and printed with where it was found; --path in search order"

# --- 3. a missing library: exit 1, named, every place searched listed -------------------------
rm "$LDP/libnccl.so.2"
rc=0
out=$(in_env "$BUNDLE/bin/fob-libs" 2>&1) || rc=$?
[[ $rc == 1 ]] || fail "fob-libs exit $rc with libnccl.so.2 missing:"$'\n'"$out"
grep -q 'libnccl.so.2 *NOT FOUND' <<<"$out" || fail "missing library not named:"$'\n'"$out"
for place in "LD_LIBRARY_PATH: $LDP" "CUDA_HOME: $CUDAHOME/lib64" \
  "python3 site-packages: $SITE1/nvidia/cu13/lib" "python3 site-packages: $SITE1/nvidia/cublas/lib" \
  "python3 site-packages: $SITE2/nvidia/nccl/lib" "CONDA_PREFIX: $CONDA/lib" \
  "/usr/local/cuda: $SYSROOT/usr/local/cuda/lib64" \
  "/usr/local/cuda-X: $SYSROOT/usr/local/cuda-13.0/lib" \
  "/usr/local/cuda-X: $SYSROOT/usr/local/cuda-12.9/lib64" \
  "system directory: $SYSROOT/usr/lib/x86_64-linux-gnu" "ld.so.cache"; do
  grep -qF "$place" <<<"$out" || fail "places searched lack '$place':"$'\n'"$out"
done
grep -q "$T/missing" <<<"$out" && fail "a directory that does not exist is listed:"$'\n'"$out"
ok "a missing library: exit 1, named, with every place searched"

# --- 4. the launchers ---------------------------------------------------------------------------
# A program that needs the missing library directly cannot start: exit 127, named, places.
rc=0
out=$(in_env "$BUNDLE/bin/fakeprog" a b 2>&1) || rc=$?
[[ $rc == 127 ]] || fail "launcher exit $rc with libnccl.so.2 missing:"$'\n'"$out"
grep -q 'fakeprog: cannot run: libnccl.so.2 not found' <<<"$out" ||
  fail "launcher does not name the missing library:"$'\n'"$out"
grep -qF "CUDA_HOME: $CUDAHOME/lib64" <<<"$out" || fail "launcher does not say where:"$'\n'"$out"
grep -q 'fakeprog args' <<<"$out" && fail "the program ran anyway"
ok "launcher: a missing library the program needs is exit 127, named, with the places"

# One that does not need it runs, says once what is missing, and exports the result.
out=$(in_env "$BUNDLE/bin/plainprog" 'x y' z 2>"$T/err") || fail "plainprog failed: $(cat "$T/err")"
grep -q 'libnccl.so.2 *NOT FOUND' "$T/err" || fail "no report on stderr: $(cat "$T/err")"
grep -qF "libcublas.so.13    $CUDAHOME/lib64/libcublas.so.13" "$T/err" ||
  fail "the report does not say what was found: $(cat "$T/err")"
grep -qF "loader library-path: $BUNDLE/lib:$CUDAHOME/lib64:$SITE1/nvidia/cu13/lib:$T/cache" \
  <<<"$out" || fail "library path: $out"
grep -q 'loader argv0: plainprog' <<<"$out" || fail "argv0: $out"
grep -q 'fakeprog args: x y z' <<<"$out" || fail "arguments: $out"
grep -qF "FOB_BUNDLE_SEARCHED=$BUNDLE" <<<"$out" || fail "guard not exported: $out"
grep -qF "OPAL_PREFIX=$BUNDLE" <<<"$out" || fail "OPAL_PREFIX not set: $out"
grep -q 'LD_LIBRARY_PATH=.*/lib$' <<<"$out" && fail "the bundle's lib/ is on LD_LIBRARY_PATH: $out"
ok "launcher: runs the program through the bundle's loader with the found directories"

# A process started by it (a rank under the bundle's mpirun) inherits the result: no search,
# no second report, the same library path, even where the machine's libraries were moved.
guard=(FOB_BUNDLE_SEARCHED="$BUNDLE" FOB_BUNDLE_CUDA_MISSING=libnccl.so.2
  FOB_BUNDLE_CUDA_PATH="$CUDAHOME/lib64:$T/cache")
out=$(in_env "${guard[@]}" PATH=/nonexistent "$BUNDLE/bin/plainprog" 2>"$T/err") ||
  fail "child failed: $(cat "$T/err")"
[[ ! -s "$T/err" ]] || fail "the child printed again: $(cat "$T/err")"
grep -qF "loader library-path: $BUNDLE/lib:$CUDAHOME/lib64:$T/cache" <<<"$out" ||
  fail "child library path: $out"
# ... and a child that needs what the parent did not find still fails, saying where it looked.
rc=0
out=$(in_env "${guard[@]}" "$BUNDLE/bin/fakeprog" 2>&1) || rc=$?
if [[ $rc != 127 ]] || ! grep -q 'libnccl.so.2' <<<"$out"; then
  fail "child with a missing need: exit $rc: $out"
fi
ok "launcher: children reuse the exported search, silently"

# FOB_REQUIRE_CUDA=1: every library is required, also by a program that needs none directly.
rc=0
out=$(in_env FOB_REQUIRE_CUDA=1 "$BUNDLE/bin/plainprog" 2>&1) || rc=$?
if [[ $rc != 127 ]] || ! grep -q 'libnccl.so.2 not found.*FOB_REQUIRE_CUDA=1' <<<"$out"; then
  fail "FOB_REQUIRE_CUDA=1: exit $rc: $out"
fi
put libnccl.so.2 "$SITE2/nvidia/nccl/lib"
out=$(in_env FOB_REQUIRE_CUDA=1 "$BUNDLE/bin/fakeprog" 2>&1) || fail "all present: $out"
grep -q 'fakeprog args' <<<"$out" || fail "FOB_REQUIRE_CUDA=1 with all present: $out"
ok "FOB_REQUIRE_CUDA=1 requires every library"

# FOB_LIBS_QUIET=1 silences the report; nothing else changes.
out=$(in_env FOB_LIBS_QUIET=1 "$BUNDLE/bin/plainprog" 2>&1) || fail "quiet: $out"
grep -q 'libraries from this machine' <<<"$out" && fail "FOB_LIBS_QUIET=1 still reports: $out"
ok "FOB_LIBS_QUIET=1"

# The launcher from another directory, through a relative path and through a symbolic link.
ln -s "$BUNDLE/bin/fakeprog" "$T/linked"
out=$(cd "$T" && in_env ./linked 2>/dev/null) || fail "through a link: $out"
grep -qF "loader library-path: $BUNDLE/lib:" <<<"$out" || fail "through a link: $out"
out=$(cd "$BUNDLE/lib" && in_env ../bin/fakeprog 2>/dev/null) || fail "relative: $out"
grep -qF "loader library-path: $BUNDLE/lib:" <<<"$out" || fail "relative: $out"
ok "launcher through a symbolic link and a relative path"

# --- 5. the places a bare GPU machine keeps them: no python3, no LD_LIBRARY_PATH -------------
# The driver in the folder NVIDIA's container runtime mounts, found before the system's; a
# 32-bit libcuda.so.1 (the 32-bit driver in /usr/local/nvidia/lib) passed over.
clear_libs
bare=(PATH="$NOPYBIN" LD_LIBRARY_PATH= CUDA_HOME= CONDA_PREFIX= FOB_LIBS_LDCONFIG=none)
mkdir -p "$SYSROOT/usr/local/nvidia/lib64" "$SYSROOT/usr/local/nvidia/lib"
put libcuda.so.1 "$SYSROOT/usr/local/nvidia/lib64" "$SYSROOT/usr/local/nvidia/lib" \
  "$SYSROOT/usr/lib/x86_64-linux-gnu"
expect_where libcuda.so.1 "$SYSROOT/usr/local/nvidia/lib64/libcuda.so.1" "${bare[@]}"
printf '\177ELF\001\001\001' >"$SYSROOT/usr/local/nvidia/lib64/libcuda.so.1"
expect_where libcuda.so.1 "$SYSROOT/usr/local/nvidia/lib/libcuda.so.1" "${bare[@]}"
rm "$SYSROOT/usr/local/nvidia/lib/libcuda.so.1"
expect_where libcuda.so.1 "$SYSROOT/usr/lib/x86_64-linux-gnu/libcuda.so.1" "${bare[@]}"
out=$(in_env "${bare[@]}" "$BUNDLE/bin/fob-libs" 2>&1 || true)
grep -qF "driver folder: $SYSROOT/usr/local/nvidia/lib64" <<<"$out" ||
  fail "the driver folder is not among the places searched:"$'\n'"$out"
ok "the driver folder /usr/local/nvidia/lib64, then lib, before the system's; 32-bit skipped"

# Wheels in a venv that no python3 on PATH names: under /opt (hidden .venv, conda envs, any
# python3.X), /usr/local, root's home and VIRTUAL_ENV; a CUDA 13 NCCL wheel before another.
clear_libs
venvs=("$SYSROOT/opt/torch/.venv/lib/python3.12/site-packages"
  "$SYSROOT/opt/conda/envs/gpu/lib/python3.11/site-packages"
  "$SYSROOT/usr/local/lib/python3.13/dist-packages"
  "$SYSROOT/root/.local/lib/python3.10/site-packages"
  "$SYSROOT/home/user/.venv/lib/python3.12/site-packages"
  "$SYSROOT/workspace/venv/lib/python3.12/site-packages")
for site in "${venvs[@]}"; do
  mkdir -p "$site/nvidia/cu13/lib"
  put libcublas.so.13 "$site/nvidia/cu13/lib"
  expect_where libcublas.so.13 "$site/nvidia/cu13/lib/libcublas.so.13" "${bare[@]}"
  rm "$site/nvidia/cu13/lib/libcublas.so.13"
done
mkdir -p "$T/venv/lib/python3.12/site-packages/nvidia/cu13/lib"
put libcublas.so.13 "$T/venv/lib/python3.12/site-packages/nvidia/cu13/lib"
expect_where libcublas.so.13 "$T/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13" \
  "${bare[@]}" VIRTUAL_ENV="$T/venv"
cu12=$SYSROOT/opt/conda/envs/gpu/lib/python3.11/site-packages
cu13=$SYSROOT/usr/local/lib/python3.13/dist-packages
mkdir -p "$cu12/nvidia/nccl/lib" "$cu13/nvidia/nccl/lib" "$cu13/nvidia_nccl_cu13-2.28.9.dist-info"
put libnccl.so.2 "$cu12/nvidia/nccl/lib" "$cu13/nvidia/nccl/lib"
expect_where libnccl.so.2 "$cu13/nvidia/nccl/lib/libnccl.so.2" "${bare[@]}"
rm -r "$cu13/nvidia_nccl_cu13-2.28.9.dist-info"
expect_where libnccl.so.2 "$cu12/nvidia/nccl/lib/libnccl.so.2" "${bare[@]}"
ok "wheels found without python3: /opt (.venv, conda envs), /usr/local, ~/.local, /home/*," \
  "/workspace, VIRTUAL_ENV;" \
  "a cu13 NCCL wheel first"

# --- 6. optional libraries -----------------------------------------------------------------------
# FOB_REQUIRE_CUDA=1 requires every library but the optional CUPTI.
put libcuda.so.1 "$SYSROOT/usr/lib/x86_64-linux-gnu"
put libcublas.so.13 "$CUDAHOME/lib64"
put libcublasLt.so.13 "$CUDAHOME/lib64"
out=$(in_env FOB_REQUIRE_CUDA=1 "$BUNDLE/bin/fakeprog" 2>&1) ||
  fail "FOB_REQUIRE_CUDA=1 with only the optional CUPTI missing: $out"
grep -q 'libcupti.so.13 *NOT FOUND (optional' <<<"$out" || fail "CUPTI not reported: $out"
grep -q 'fakeprog args' <<<"$out" || fail "the program did not run: $out"
in_env "$BUNDLE/bin/fob-libs" --quiet || fail "fob-libs fails for a missing optional library"
ok "a missing optional library is reported, never fatal, FOB_REQUIRE_CUDA=1 included"

for f in "$TEMPLATES/launcher" "$TEMPLATES/fob-libs" "$TEMPLATES/fob-env.sh"; do
  if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -x -s sh "$f" || fail "shellcheck $f"
  fi
done
ok "all launcher checks passed"
