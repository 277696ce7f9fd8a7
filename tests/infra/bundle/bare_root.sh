#!/usr/bin/env bash
# The proof that the bundle needs nothing of ours on the machine: a minimal Debian root
# (debootstrap --variant=minbase, the host's own suite) with no MPI, HDF5, BLAS or yaml-cpp;
# the bundle copied in read-only; the cpu backend at 2 ranks under the bundle's mpirun,
# verified, inside a chroot; and nothing left behind outside /out.
#
# The root is cached in FOB_BUNDLE_ROOTFS (the build tree) and made again when its marker is
# missing. Needs root (chroot, mount), debootstrap (installed with apt-get when missing) and
# the distribution's mirror. Without them it is skipped (exit 77), except under CI=true.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
require_bundle
ROOTFS=${FOB_BUNDLE_ROOTFS:?FOB_BUNDLE_ROOTFS must name where the root file system is kept}
# shellcheck source-path=SCRIPTDIR source=rootfs.sh
source "$(dirname "$0")/rootfs.sh"
TIMEOUT=300

scratch=$(mktemp -d)
cleanup() {
  unmount_all
  # The cached root stays as debootstrap made it: no bundle, no results.
  if [[ -d "$ROOTFS/bundle" ]] && ! mountpoint -q "$ROOTFS/bundle"; then
    chmod -R u+w "$ROOTFS/bundle" && rm -rf "$ROOTFS/bundle"
  fi
  if [[ -d "$ROOTFS/out" ]] && ! mountpoint -q "$ROOTFS/out"; then rm -rf "$ROOTFS/out"; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # a CTest timeout: unmount all the same

ensure_rootfs
ok "root file system $ROOTFS"

# It has none of the libraries the bundle carries.
present=$(find "$ROOTFS" -xdev \( -path "$ROOTFS/bundle" -o -path "$ROOTFS/proc" \) -prune -o \
  \( -name 'libmpi*' -o -name 'libhdf5*' -o -name 'libblas*' -o -name 'libopenblas*' \
  -o -name 'libyaml-cpp*' -o -name 'libopen-pal*' -o -name 'libpmix*' \) -print)
[[ -z "$present" ]] || fail "the root has libraries the bundle must bring: $present"
[[ ! -e "$ROOTFS/usr/bin/mpirun" ]] || fail "the root has an mpirun"
ok "no MPI, HDF5, BLAS or yaml-cpp in the root"

# --- the bundle in it, read-only ----------------------------------------------------------------
if [[ -d "$ROOTFS/bundle" ]]; then chmod -R u+w "$ROOTFS/bundle"; fi
rm -rf --one-file-system "$ROOTFS/bundle" "$ROOTFS/out"
cp -a "$FOB_BUNDLE_DIR" "$ROOTFS/bundle"
chmod -R a-w "$ROOTFS/bundle"
mkdir -p "$ROOTFS/out"

# Read-only for root too (root ignores the permission bits).
mount_in "$ROOTFS/bundle" --bind "$ROOTFS/bundle"
mount -o remount,bind,ro "$ROOTFS/bundle"
mount_in "$ROOTFS/proc" -t proc proc
mount_in "$ROOTFS/dev/shm" -t tmpfs -o mode=1777 tmpfs
[[ -c "$ROOTFS/dev/null" ]] || fail "the root's /dev/null is not a device"

# Everything in the root but /proc, /sys, /dev and /out, before and after.
listing() {
  (cd "$ROOTFS" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./out \) \
    -prune -o -printf '%y %p\n') | LC_ALL=C sort
}
listing >"$scratch/before.txt"

in_root() {
  timeout -k 10 "$TIMEOUT" chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
    LANG=C "$@"
}

# A singleton first (fobench without mpirun), then 2 ranks under the bundle's mpirun.
in_root /bundle/bin/fobench --version >"$scratch/version.txt" 2>"$scratch/version.err" ||
  fail "fobench --version in the root: $(cat "$scratch/version.txt" "$scratch/version.err")"
ok "singleton: $(head -n1 "$scratch/version.txt")"

in_root /bundle/bin/mpirun --allow-run-as-root --oversubscribe -np 2 /bundle/bin/fobench run \
  -c /bundle/configs/smoke.yaml --backend cpu --verify -o /out/bare.h5 >"$scratch/run.log" 2>&1 ||
  { cat "$scratch/run.log" >&2; fail "the 2-rank run in the root failed"; }
[[ -f "$ROOTFS/out/bare.h5" ]] || fail "no /out/bare.h5"
in_root /bundle/bin/fobench report /out/bare.h5 --format csv >"$scratch/report.csv" \
  2>"$scratch/report.err" || fail "fobench report in the root: $(cat "$scratch/report.err")"
grep -q '^# backend: cpu' "$scratch/report.csv" || fail "not the cpu backend"
check_verified_csv "$scratch/report.csv" || fail "a case was not verified"
ok "2 ranks, cpu backend, every case verified, in a root without our dependencies"

listing >"$scratch/after.txt"
diff "$scratch/before.txt" "$scratch/after.txt" >"$scratch/diff.txt" ||
  fail "the run changed the root outside /out:"$'\n'"$(cat "$scratch/diff.txt")"
shm=$(ls -A "$ROOTFS/dev/shm")
[[ -z "$shm" ]] || fail "left in /dev/shm: $shm"
ok "nothing new outside /out (the tree, /tmp, /dev/shm)"
