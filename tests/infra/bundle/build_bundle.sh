#!/usr/bin/env bash
# Makes the GPU bundle from this build (scripts/gpu_bundle.sh, into FOB_BUNDLE_DIR) and checks
# it: within 48 MiB, the launchers and programs the build has, every file in the MANIFEST, no
# CUDA library or OpenBLAS carried, the CUDA libraries the carried files need listed in
# lib/cuda-needs.txt, what those need carried, no DT_RPATH, the reference BLAS, and fobench
# starting from it.
# The fixture of the other bundle tests.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
: "${FOB_BUNDLE_DIR:?FOB_BUNDLE_DIR must name where the bundle goes}"
: "${FOB_BUILD_DIR:?FOB_BUILD_DIR must name the build to bundle}"
B=$FOB_BUNDLE_DIR

BUILD_DIR=$FOB_BUILD_DIR bash "$FOB_SOURCE_DIR/scripts/gpu_bundle.sh" "$B" ||
  fail "scripts/gpu_bundle.sh failed"

bytes=$(du -sb "$B" | cut -f1)
((bytes <= 48 * 1024 * 1024)) || fail "the bundle is $bytes bytes, over 48 MiB"
ok "size $bytes bytes ($((bytes / 1024 / 1024)) MiB) <= 48 MiB"

# The launchers, and a program for every one the build has.
for f in bin/fobench bin/mpirun bin/orted bin/fob-libs run_checks.sh; do
  [[ -x "$B/$f" ]] || fail "no executable $f"
done
for f in lib/ld-linux-x86-64.so.2 lib/libc.so.6 lib/fob-env.sh lib/cuda-needs.txt \
  lib/libblas.so.3 libexec/fobench libexec/mpirun libexec/orted README.md MANIFEST \
  configs/smoke.yaml share/openmpi/help-mpi-runtime.txt etc/openmpi/openmpi-mca-params.conf; do
  [[ -f "$B/$f" ]] || fail "no $f"
done
for prog in tests/fob_gpu_tests bench/fob_gemm_slices_cuda libfob_cuda.so libfobcore.so; do
  name=$(basename "$prog")
  if [[ -f "$FOB_BUILD_DIR/$prog" ]]; then
    case $name in
      lib*) [[ -f "$B/lib/$name" ]] || fail "the build has $prog, the bundle no lib/$name" ;;
      *) [[ -x "$B/bin/$name" && -f "$B/libexec/$name" ]] ||
        fail "the build has $prog, the bundle no bin/$name" ;;
    esac
  fi
done
ok "launchers and programs present"

# Every file is in the MANIFEST, with its source.
diff <(cd "$B" && find . -type f -printf '%P\n' | grep -vx MANIFEST | LC_ALL=C sort) \
  <(grep -v '^#' "$B/MANIFEST" | cut -f1 | LC_ALL=C sort) ||
  fail "the MANIFEST and the files differ (< files, > MANIFEST)"
grep -q $'^lib/libc.so.6\t/.*\tlibc6[: ]' "$B/MANIFEST" || fail "no Debian package for libc.so.6"
grep -q $'^lib/libblas.so.3\t/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.*\tlibblas3' \
  "$B/MANIFEST" || fail "libblas.so.3 is not the reference BLAS of libblas3"
grep -q '^# fobench git [0-9a-f]\{40\}' "$B/MANIFEST" || fail "no git commit in the MANIFEST"
ok "MANIFEST lists every file, its source and package; libblas.so.3 is the reference BLAS"

# Nothing the target must provide is carried, and what the carried files need from it is listed.
carried=$(find "$B" -name 'libcublas*' -o -name 'libcudart*' -o -name 'libnccl*' \
  -o -name 'libcuda.so*' -o -name 'libopenblas*')
[[ -z "$carried" ]] || fail "carried, but must come from the machine: $carried"
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
  rel=${f#"$B"/}
  dyn=$(readelf -dW "$f")
  grep -q '(RPATH)' <<<"$dyn" && fail "$rel has a DT_RPATH"
  while read -r soname; do
    grep -qx "$rel $soname" "$B/lib/cuda-needs.txt" ||
      fail "$rel needs $soname, not in lib/cuda-needs.txt"
  done < <(sed -n 's/.*(NEEDED).*\[\(lib\(cuda\|cudart\|cublas\|cublasLt\|nccl\)\.so[^]]*\)\].*/\1/p' \
    <<<"$dyn")
done < <(find "$B/libexec" "$B/lib" -type f -print0)
ok "no CUDA library carried; cuda-needs.txt: $(grep -vc '^#' "$B/lib/cuda-needs.txt") entries"

# What the machine's CUDA libraries need besides each other is carried (libstdc++ for NCCL,
# libutil for CUPTI): the bundle's loader would otherwise take the machine's copies, built for
# another glibc. Checked against this machine's toolkit, where it has one.
toolkit=${CUDA_HOME:-/usr/local/cuda}
checked=0
while read -r soname; do
  lib=""
  for dir in "$toolkit/lib64" "$toolkit/extras/CUPTI/lib64"; do
    if [[ -e "$dir/$soname" ]]; then lib=$dir/$soname && break; fi
  done
  [[ -n "$lib" ]] || continue
  checked=$((checked + 1))
  for dep in $(readelf -dW "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'); do
    [[ $dep =~ ^lib(cuda|cudart|cublas|cublasLt|nccl|cupti)\.so || $dep == ld-linux-x86-64.so.2 ]] &&
      continue
    [[ -f "$B/lib/$dep" ]] || fail "$soname (the machine's) needs $dep, which the bundle lacks"
  done
done < <(awk '!/^#/ { print $2 }' "$B/lib/cuda-needs.txt" | sort -u)
ok "what $checked CUDA libraries of $toolkit need is carried"

# It starts (the bundle's loader, glibc, MPI singleton) and says which BLAS it has.
version=$(FOB_LIBS_QUIET=1 "$B/bin/fobench" --version) || fail "bin/fobench --version failed"
grep -qi '^BLAS:.*reference' <<<"$version" || fail "not the reference BLAS: $version"
ok "bin/fobench --version: $(head -n1 <<<"$version")"
