#!/usr/bin/env bash
# Writes the GPU bundle: a self-contained, relocatable copy of fobench, its GPU tests and the
# cuBLAS micro-benchmark, with every shared library they need except the CUDA driver, the CUDA
# runtime, cuBLAS(Lt) and NCCL (far too large; the launchers find the target machine's own).
# It runs on any x86-64 Linux with a CUDA 13 driver, from any path, read-only, without root,
# MPI, HDF5, BLAS or a compiler installed there. See scripts/bundle/README.md (the bundle's
# README.md) for the layout and why it is built this way.
#
#   scripts/gpu_bundle.sh DIR            (BUILD_DIR: the build to bundle, default build)
#
# DIR must be empty, missing, or an earlier bundle (replaced). The bundle must stay within
# 48 MiB (du -sb DIR); the script fails otherwise and names the largest files.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TEMPLATES="$REPO/scripts/bundle"
MAX_BYTES=$((48 * 1024 * 1024))
# The reference BLAS of Debian's libblas3 (with CBLAS), carried as libblas.so.3: OpenBLAS,
# what libblas.so.3 usually is on the build machine, is 36 MB.
REF_BLAS=${FOB_REF_BLAS:-/usr/lib/x86_64-linux-gnu/blas/libblas.so.3}
# The libraries the target machine provides: the CUDA driver, runtime, cuBLAS(Lt), NCCL.
CUDA_RE='^lib(cuda|cudart|cublas|cublasLt|nccl)\.so'
# Those the cuda module loads itself when the machine has them (CUPTI: kernel-level task times;
# without it, it times with CUDA events), so that no program needs them to start.
OPTIONAL_CUDA=(libcupti.so.13)
# Never carried: OpenBLAS (too large; link the generic libblas.so.3), the loader (carried
# under its own name), the vDSO.
LOADER_SONAME=ld-linux-x86-64.so.2

declare -A LIBS=()      # soname -> source path of every library carried in lib/
declare -A COPIED=()    # bundle path -> source path (the MANIFEST)
CUDA_NEEDS=()           # "bundle-path soname" lines for lib/cuda-needs.txt

die() {
  echo "gpu_bundle: $*" >&2
  exit 1
}

usage() {
  echo "usage: [BUILD_DIR=build] $0 DIR" >&2
  exit 2
}

require_tools() {
  local tool
  for tool in readelf ldd strip du; do
    command -v "$tool" >/dev/null 2>&1 || die "needs $tool (binutils / libc-bin / coreutils)"
  done
  [[ -f "$REF_BLAS" ]] || die "no reference BLAS at $REF_BLAS: apt-get install libblas3"
}

# prepare_out DIR: an empty DIR, replacing an earlier bundle (which may be read-only).
prepare_out() {
  local dir=$1
  if [[ -e "$dir" && ! -d "$dir" ]]; then die "$dir exists and is not a directory"; fi
  mkdir -p "$dir"
  if [[ -n "$(ls -A "$dir")" ]]; then
    [[ -f "$dir/MANIFEST" ]] || die "$dir is not empty and not an earlier bundle (no MANIFEST)"
    chmod -R u+w "$dir"
    find "$dir" -mindepth 1 -delete
  fi
  mkdir -p "$dir"/{bin,libexec,lib/openmpi,lib/pmix,lib/hwloc,share,etc/openmpi,etc/pmix,configs}
}

is_elf() {
  [[ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" == '177ELF' ]]
}

# copy SRC DEST (relative to OUT): a copy, stripped when it is an ELF file (not the loader),
# recorded in the MANIFEST.
copy() {
  local src=$1 dest=$2 real
  real=$(readlink -f "$src")
  mkdir -p "$(dirname "$OUT/$dest")"
  if is_elf "$real" && [[ "$(basename "$dest")" != "$LOADER_SONAME" ]]; then
    strip --strip-unneeded -o "$OUT/$dest" "$real"
  else
    cp "$real" "$OUT/$dest"
  fi
  chmod u+w,a+r "$OUT/$dest"
  COPIED[$dest]=$real
}

# needed FILE: its DT_NEEDED sonames.
needed() {
  readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'
}

# check_no_rpath FILE: DT_RPATH would outrank the loader's --library-path; DT_RUNPATH does not.
check_no_rpath() {
  local dynamic
  dynamic=$(readelf -dW "$1")
  if [[ $dynamic == *'(RPATH)'* ]]; then
    die "$1 has a DT_RPATH, which would outrank the bundle's library path (link with" \
      "--enable-new-dtags, the default, or remove it with patchelf --remove-rpath)"
  fi
}

# carry_deps FILE DEST: carries everything FILE (which goes to DEST in the bundle) needs,
# recursively, except the machine's CUDA libraries, which are recorded for cuda-needs.txt.
# Sonames are resolved by ldd on the file itself, so each one's RUNPATH is honoured.
carry_deps() {
  local file=$1 dest=$2 soname path
  local -A where=()
  check_no_rpath "$file"
  while read -r soname path; do
    where[$soname]=$path
  done < <(ldd "$file" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }')
  for soname in $(needed "$file"); do
    if [[ $soname =~ $CUDA_RE ]]; then
      CUDA_NEEDS+=("$dest $soname")
      # cuBLAS cannot load without the cuBLASLt of the same release.
      if [[ $soname == libcublas.so.* ]]; then CUDA_NEEDS+=("$dest libcublasLt.${soname#libcublas.}"); fi
      continue
    fi
    [[ $soname == "$LOADER_SONAME" || -n ${LIBS[$soname]:-} ]] && continue
    case $soname in
      libopenblas.so*)
        die "$file links $soname: the bundle carries the reference BLAS as libblas.so.3;" \
          "link the generic libblas.so.3 instead" ;;
      libblas.so.3) path=$REF_BLAS ;;
      libfobcore.so | libfob_cuda.so) path=$BUILD/$soname ;;
      *) path=${where[$soname]:-} ;;
    esac
    if [[ -z "$path" || "$path" == not || ! -e "$path" ]]; then
      die "$file needs $soname, which ldd does not find on this machine"
    fi
    LIBS[$soname]=$path
    copy "$path" "lib/$soname"
    carry_deps "$path" "lib/$soname"
  done
}

# carry_elf SRC DEST: an ELF file and everything it needs.
carry_elf() {
  copy "$1" "$2"
  carry_deps "$1" "$2"
}

# glibc as a whole: libraries that glibc itself loads by name at run time (name service,
# libm's vector variants) are not in any DT_NEEDED list.
carry_glibc() {
  local libdir soname
  libdir=$(dirname "$(readlink -f "$(ldd /bin/sh | awk '$1 == "libc.so.6" { print $3 }')")")
  copy "$(readlink -f "/lib64/$LOADER_SONAME")" "lib/$LOADER_SONAME"
  # libutil.so.1: CUPTI needs it.
  for soname in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 \
    libutil.so.1 libnss_files.so.2 libnss_dns.so.2; do
    if [[ -e "$libdir/$soname" && -z ${LIBS[$soname]:-} ]]; then
      LIBS[$soname]=$libdir/$soname
      copy "$libdir/$soname" "lib/$soname"
    fi
  done
}

# plugin_ok FILE: true when every library FILE loads is carried already (or is an Open MPI
# libmca_common_* helper whose own libraries are), so that it cannot fail to load on the
# target. This drops the network plugins (ofi, ucx, psm, verbs, ...) and their stacks.
plugin_ok() {
  local soname path
  while read -r soname path; do
    [[ -n ${LIBS[$soname]:-} || $soname == "$LOADER_SONAME" ]] && continue
    [[ $soname =~ $CUDA_RE ]] && return 1
    [[ $path == not ]] && return 1
    if [[ $soname == libmca_common_* ]] && plugin_ok "$path"; then continue; fi
    return 1
  done < <(ldd "$1" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }')
}

# carry_plugins SRCDIR DESTDIR PATTERN: the plugins plugin_ok accepts.
carry_plugins() {
  local src=$1 dest=$2 pattern=$3 plugin kept=0 dropped=()
  for plugin in "$src"/$pattern; do
    [[ -f "$plugin" ]] || continue
    if plugin_ok "$plugin"; then
      carry_elf "$plugin" "$dest/$(basename "$plugin")"
      kept=$((kept + 1))
    else
      dropped+=("$(basename "$plugin" .so)")
    fi
  done
  echo "gpu_bundle: $dest: $kept plugins; left out (libraries not carried): ${dropped[*]:-none}" >&2
}

# copy_tree SRC DEST: plain files (help texts, configuration), recorded one by one.
copy_tree() {
  local src=$1 dest=$2 f
  while IFS= read -r -d '' f; do
    copy "$f" "$dest/${f#"$src"/}"
  done < <(find "$src" -type f -print0 | sort -z)
}

ompi_path() {
  ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"
}

carry_mpi() {
  local orterun orted pkglibdir pkgdatadir sysconfdir libpmix pmix_home
  orterun=$(command -v orterun || true)
  orted=$(command -v orted || true)
  [[ -n "$orterun" && -n "$orted" ]] || die "no orterun/orted (Open MPI 4): apt-get install openmpi-bin"
  carry_elf "$orterun" libexec/mpirun
  carry_elf "$orted" libexec/orted
  pkglibdir=$(ompi_path pkglibdir)
  pkgdatadir=$(ompi_path pkgdatadir)
  sysconfdir=$(ompi_path sysconfdir)
  [[ -d "$pkglibdir" && -d "$pkgdatadir" ]] || die "ompi_info names no plugin or help directory"

  # PMIx (Debian's Open MPI uses the external one): the library, its plugins, help, defaults.
  libpmix=$(ldd "$pkglibdir"/mca_pmix_ext*.so | awk '$1 == "libpmix.so.2" { print $3 }')
  [[ -n "$libpmix" ]] || die "cannot find libpmix.so.2 beside Open MPI's pmix plugin"
  LIBS[libpmix.so.2]=$libpmix
  carry_elf "$libpmix" lib/libpmix.so.2
  pmix_home=$(dirname "$(dirname "$(readlink -f "$libpmix")")")
  carry_plugins "$pmix_home/lib/pmix" lib/pmix 'pmix_mca_*.so'
  copy_tree "$pmix_home/share/pmix" share/pmix
  if [[ -f "$pmix_home/share/pmix-mca-params.conf" ]]; then
    copy "$pmix_home/share/pmix-mca-params.conf" etc/pmix/pmix-mca-params.conf
  fi

  carry_plugins "$pkglibdir" lib/openmpi 'mca_*.so'
  copy_tree "$pkgdatadir" share/openmpi
  local conf
  for conf in openmpi-mca-params.conf openmpi-default-hostfile; do
    [[ -f "$sysconfdir/$conf" ]] && copy "$sysconfdir/$conf" "etc/openmpi/$conf"
  done
}

carry_programs() {
  [[ -x "$BUILD/fobench" ]] || die "no $BUILD/fobench: build first (scripts/build.sh)"
  carry_elf "$BUILD/fobench" libexec/fobench
  install_launcher fobench
  # The cuda backend module sits beside libfobcore.so, where libfobcore looks for it.
  if [[ -f "$BUILD/libfob_cuda.so" ]]; then
    LIBS[libfob_cuda.so]=$BUILD/libfob_cuda.so
    carry_elf "$BUILD/libfob_cuda.so" lib/libfob_cuda.so
  fi
  local prog
  for prog in tests/fob_gpu_tests bench/fob_gemm_slices_cuda; do
    if [[ -x "$BUILD/$prog" ]]; then
      carry_elf "$BUILD/$prog" "libexec/$(basename "$prog")"
      install_launcher "$(basename "$prog")"
    else
      echo "gpu_bundle: no $BUILD/$prog (not built): left out" >&2
    fi
  done
}

install_launcher() {
  cp "$TEMPLATES/launcher" "$OUT/bin/$1"
  chmod 755 "$OUT/bin/$1"
  COPIED[bin/$1]=$TEMPLATES/launcher
}

carry_templates() {
  cp "$TEMPLATES/fob-env.sh" "$OUT/lib/fob-env.sh"
  COPIED[lib/fob-env.sh]=$TEMPLATES/fob-env.sh
  cp "$TEMPLATES/fob-libs" "$OUT/bin/fob-libs"
  COPIED[bin/fob-libs]=$TEMPLATES/fob-libs
  cp "$TEMPLATES/run_checks.sh" "$OUT/run_checks.sh"
  COPIED[run_checks.sh]=$TEMPLATES/run_checks.sh
  cp "$TEMPLATES/run_checks_steps.sh" "$OUT/run_checks_steps.sh"
  COPIED[run_checks_steps.sh]=$TEMPLATES/run_checks_steps.sh
  cp "$TEMPLATES/README.md" "$OUT/README.md"
  COPIED[README.md]=$TEMPLATES/README.md
  chmod 755 "$OUT/bin/fob-libs" "$OUT/run_checks.sh"
  install_launcher mpirun
  install_launcher orted
  local f
  for f in "$REPO"/bench_configs/*; do
    [[ -f "$f" ]] || continue
    cp "$f" "$OUT/configs/"
    COPIED[configs/$(basename "$f")]=$f
  done
}

# cuda_lib_dirs: where this machine's CUDA libraries are: those libfob_cuda.so links, then the
# toolkit's (CUPTI may sit apart, in extras/CUPTI).
cuda_lib_dirs() {
  local soname path toolkit=${CUDA_HOME:-/usr/local/cuda}
  while read -r soname path; do
    if [[ $soname =~ $CUDA_RE && -e $path ]]; then dirname "$path"; fi
  done < <(ldd "$BUILD/libfob_cuda.so" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }')
  printf '%s\n' "$toolkit/lib64" "$toolkit/extras/CUPTI/lib64"
}

# carry_cuda_deps: what the machine's CUDA libraries need besides each other and glibc's core
# (libstdc++ for NCCL, libutil for CUPTI), taken from this machine's copies of them. The
# bundle's loader looks in lib/ first, and where lib/ lacks one it would take the machine's,
# built for another glibc than the bundle's.
carry_cuda_deps() {
  [[ -f "$OUT/lib/libfob_cuda.so" ]] || return 0
  local soname dir path dep dep_path
  local -a dirs
  mapfile -t dirs < <(cuda_lib_dirs | awk '!seen[$0]++')
  for soname in $(printf '%s\n' "${CUDA_NEEDS[@]}" | awk '{ print $2 }') "${OPTIONAL_CUDA[@]}"; do
    path=""
    for dir in "${dirs[@]}"; do
      if [[ -e "$dir/$soname" ]]; then path=$dir/$soname && break; fi
    done
    if [[ -z "$path" ]]; then
      echo "gpu_bundle: no $soname on this machine: what it needs is not carried" >&2
      continue
    fi
    while read -r dep dep_path; do
      [[ $dep =~ $CUDA_RE || $dep == "$LOADER_SONAME" || -n ${LIBS[$dep]:-} ]] && continue
      [[ -e "$dep_path" ]] || die "$path needs $dep, which ldd does not find on this machine"
      LIBS[$dep]=$dep_path
      carry_elf "$dep_path" "lib/$dep"
    done < <(ldd "$path" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }')
  done
}

write_cuda_needs() {
  {
    echo "# CUDA libraries the carried files need from the machine: FILE SONAME"
    echo "# (the launchers look for these and for the driver, libcuda.so.1; see lib/fob-env.sh)"
    printf '%s\n' "${CUDA_NEEDS[@]}" | awk 'NF && !seen[$0]++'
    if [[ -f "$OUT/lib/libfob_cuda.so" ]]; then printf 'optional %s\n' "${OPTIONAL_CUDA[@]}"; fi
  } >"$OUT/lib/cuda-needs.txt"
  COPIED[lib/cuda-needs.txt]="(generated by scripts/gpu_bundle.sh)"
}

# write_manifest: every carried file with its source and, where dpkg knows it, its Debian
# package and version; the git commit of the programs.
write_manifest() {
  local commit dest src pkg
  local -A pkg_of=() version_of=()
  commit=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)
  if [[ -n "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    commit+=" (with local changes)"
  fi
  if command -v dpkg-query >/dev/null 2>&1; then
    local -a sources=()
    for src in "${COPIED[@]}"; do
      [[ $src == /* ]] && sources+=("$src" "${src/#\/usr\//\/}")
    done
    # dpkg knows a file under the path its package shipped it: /lib/... or /usr/lib/...
    while IFS= read -r line; do
      [[ $line == diversion* ]] && continue
      pkg=${line%%: *}
      pkg=${pkg%%, *}  # a file several packages ship: the first
      src=${line#*: }
      pkg_of[$src]=$pkg
      pkg_of[/usr$src]=$pkg
    done < <(dpkg-query -S "${sources[@]}" 2>/dev/null || true)
    for pkg in $(printf '%s\n' "${pkg_of[@]}" | sort -u); do
      version_of[$pkg]=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo '?')
    done
  fi
  {
    echo "# fobench GPU bundle, made $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
    echo "# fobench git $commit; build $BUILD"
    echo "# bundle path<TAB>source<TAB>Debian package version"
    while IFS= read -r dest; do
      src=${COPIED[$dest]}
      pkg=${pkg_of[$src]:-}
      if [[ -n "$pkg" ]]; then
        printf '%s\t%s\t%s %s\n' "$dest" "$src" "$pkg" "${version_of[$pkg]}"
      elif [[ $src == "$REPO"/* || $src == "$BUILD"/* ]]; then
        printf '%s\t%s\tfobench %s\n' "$dest" "$src" "${commit%% *}"
      else
        printf '%s\t%s\t-\n' "$dest" "$src"
      fi
    done < <(printf '%s\n' "${!COPIED[@]}" | LC_ALL=C sort)
  } >"$OUT/MANIFEST"
}

check_size() {
  local bytes
  bytes=$(du -sb "$OUT" | cut -f1)
  if ((bytes > MAX_BYTES)); then
    echo "gpu_bundle: $OUT is $bytes bytes, over the limit of $MAX_BYTES (48 MiB); largest:" >&2
    find "$OUT" -type f -printf '%s\t%P\n' | sort -rn | sed -n 1,15p >&2
    exit 1
  fi
  echo "gpu_bundle: wrote $OUT: $bytes bytes ($((bytes * 100 / MAX_BYTES))% of 48 MiB)," \
    "${#COPIED[@]} files" >&2
}

main() {
  [[ $# -eq 1 && -n "$1" ]] || usage
  require_tools
  BUILD=${BUILD_DIR:-build}
  [[ $BUILD == /* ]] || BUILD=$REPO/$BUILD
  [[ -d "$BUILD" ]] || die "no build directory $BUILD (BUILD_DIR)"
  BUILD=$(cd "$BUILD" && pwd)
  prepare_out "$1"
  OUT=$(cd "$1" && pwd)
  carry_glibc
  carry_programs
  carry_cuda_deps
  carry_mpi
  carry_templates
  write_cuda_needs
  write_manifest
  # Readable and runnable by anyone; nothing in it is written to at run time.
  chmod -R a+rX,go-w "$OUT"
  check_size
}

main "$@"
