#!/usr/bin/env bash
# The bundle on a bare root laid out like a GPU machine's, with the CUDA toolkit's stub
# libcuda.so as its driver: the minimal Debian root of bundle_bare_root (no python3, no CUDA
# toolkit) under an overlay, with
#   - the CUDA 13 nvidia-* wheels (NCCL, cuBLAS, CUPTI, the runtime, NVTX) as pip lays them
#     out, read-only, in a venv no python3 on PATH names: /opt/torch/.venv/lib/python3.12/
#     site-packages (tests/infra/bundle/wheels.sh: from the toolkit where it holds the very same
#     files, else from the wheels scripts/deps.sh fetched; never downloaded here);
#   - the toolkit's stub libcuda.so as /usr/local/nvidia/lib64/libcuda.so.1, a read-only folder
#     on no search path (no LD_LIBRARY_PATH, not in ld.so.cache), as NVIDIA's container
#     runtime mounts the driver;
#   - the bundle, read-only, at /bundle.
# In a chroot with a bare environment it checks that bin/fob-libs finds every library (the
# driver in its folder, the others in the wheels), that what CUPTI needs comes from the bundle,
# that fobench --version names them and says the driver is the stub, that fobench run --backend
# cuda exits 2 within seconds naming why (alone and under mpirun) and writes nothing, and that
# run_checks.sh, started by the command the bundle's README gives, ends in under a minute with
# every step recorded, only checks.tgz and summary.txt in its OUTDIR, and the cause named once. Then, the wheels in a conda environment
# of another Python version and the driver in /usr/local/nvidia/lib: still found.
#
# Needs root (overlay, chroot, mount), the toolkit's stub (CUDA_HOME, default /usr/local/cuda)
# and a bundle with the cuda module; skipped without them (exit 77), except under CI=true.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
require_bundle
ROOTFS=${FOB_BUNDLE_ROOTFS:?FOB_BUNDLE_ROOTFS must name where the root file system is kept}
# shellcheck source-path=SCRIPTDIR source=rootfs.sh
source "$(dirname "$0")/rootfs.sh"
TOOLKIT=${CUDA_HOME:-/usr/local/cuda}
STUB="$TOOLKIT/lib64/stubs/libcuda.so"
SITE=/opt/torch/.venv/lib/python3.12/site-packages
DRIVER_DIR=/usr/local/nvidia/lib64
TIMEOUT=120

[[ -f "$FOB_BUNDLE_DIR/lib/libfob_cuda.so" ]] ||
  skip "the bundle has no cuda module: this build has no cuda backend (FOB_CUDA)"
[[ -f "$STUB" ]] || skip "no stub driver $STUB: no CUDA toolkit (CUDA_HOME)"

scratch=$(mktemp -d)
R="$scratch/root"  # the overlay: the cached root below, everything written here above it
cleanup() {
  unmount_all
  rm -rf --one-file-system "$scratch"
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # a CTest timeout: unmount all the same

ensure_rootfs
rc=0
bash "$(dirname "$0")/wheels.sh" layout "$scratch/wheels" 2>"$scratch/wheels.log" || rc=$?
if [[ $rc == 3 ]]; then skip "$(tail -n1 "$scratch/wheels.log")"; fi
[[ $rc == 0 ]] || fail "wheels.sh layout: $(cat "$scratch/wheels.log")"
ok "wheels: $(sed -E 's/^wheels: ([a-z0-9_]+): (from the toolkit|unpacked).*/\1 (\2)/' \
  "$scratch/wheels.log" | paste -sd,)"

mkdir -p "$scratch/upper" "$scratch/work" "$R"
mount_in "$R" -t overlay overlay \
  -o "lowerdir=$ROOTFS,upperdir=$scratch/upper,workdir=$scratch/work" ||
  skip "cannot mount an overlay on $ROOTFS (no overlayfs in this kernel or container?)"
[[ ! -e "$R/usr/bin/python3" && ! -e "$R/usr/local/cuda" ]] ||
  fail "the root has python3 or a CUDA toolkit: not bare"

# ro_bind SRC TARGET: SRC mounted read-only at TARGET in the root (root ignores permissions).
ro_bind() {
  mkdir -p "$R$2"
  mount_in "$R$2" --bind "$1"
  mount -o remount,bind,ro "$R$2"
}
# place_driver DIR: the stub as DIR/libcuda.so.1, a read-only folder, as the runtime mounts it.
place_driver() {
  mkdir -p "$scratch/driver"
  cp "$STUB" "$scratch/driver/libcuda.so.1"
  ro_bind "$scratch/driver" "$1"
}
ro_bind "$FOB_BUNDLE_DIR" /bundle
ro_bind "$scratch/wheels" "$SITE"
place_driver "$DRIVER_DIR"
mount_in "$R/proc" -t proc proc
mount_in "$R/dev/shm" -t tmpfs -o mode=1777 tmpfs
mkdir -p "$R/out"

listing() {  # the root's tree but /proc, /sys, /dev and /out
  (cd "$R" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./out \) \
    -prune -o -printf '%y %p\n') | LC_ALL=C sort
}
listing >"$scratch/before.txt"

in_root() {
  timeout -k 10 "$TIMEOUT" chroot "$R" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C "$@"
}

# --- the libraries: the driver in its folder, the rest in the wheels --------------------------
in_root /bundle/bin/fob-libs >"$scratch/libs.txt" 2>&1 ||
  fail "fob-libs in the root:"$'\n'"$(cat "$scratch/libs.txt")"
grep -qE "^  libcuda\.so\.1 +$DRIVER_DIR/libcuda\.so\.1 \[driver folder\]$" "$scratch/libs.txt" ||
  fail "the driver is not found in its folder:"$'\n'"$(cat "$scratch/libs.txt")"
for lib in cu13/lib/libcublas.so.13 cu13/lib/libcublasLt.so.13 nccl/lib/libnccl.so.2 \
  cu13/lib/libcudart.so.13 cu13/lib/libcupti.so.13; do
  grep -qE "^  ${lib##*/} +$SITE/nvidia/$lib \[site-packages\]$" "$scratch/libs.txt" ||
    fail "${lib##*/} is not found in the wheels:"$'\n'"$(cat "$scratch/libs.txt")"
done
ok "fob-libs: the driver in $DRIVER_DIR, cuBLAS, NCCL, the runtime and CUPTI in $SITE"

# What CUPTI needs comes from the bundle and the wheels, never from the root's own glibc.
in_root /bundle/lib/ld-linux-x86-64.so.2 --library-path "/bundle/lib:$SITE/nvidia/cu13/lib" \
  --list "$SITE/nvidia/cu13/lib/libcupti.so.13" >"$scratch/cupti.txt" 2>&1 ||
  fail "the bundle's loader cannot load CUPTI:"$'\n'"$(cat "$scratch/cupti.txt")"
foreign=$(grep '=>' "$scratch/cupti.txt" | grep -vE "=> (/bundle/lib/|$SITE/)" || true)
[[ -z "$foreign" ]] || fail "CUPTI loads libraries from outside the bundle:"$'\n'"$foreign"
grep -q 'libutil.so.1 => /bundle/lib/libutil.so.1' "$scratch/cupti.txt" ||
  fail "libutil.so.1 is not the bundle's:"$'\n'"$(cat "$scratch/cupti.txt")"
ok "CUPTI's libraries (libutil.so.1 too) come from the bundle"

# --- fobench --version: the libraries, and the driver is the stub -----------------------------
in_root /bundle/bin/fobench --version >"$scratch/version.txt" 2>&1 ||
  fail "fobench --version:"$'\n'"$(cat "$scratch/version.txt")"
cuda=$(grep '^cuda: ' "$scratch/version.txt") || fail "no cuda line:"$'\n'"$(cat "$scratch/version.txt")"
for want in "driver stub ($DRIVER_DIR/libcuda.so.1)" "cuBLAS 13." \
  "($SITE/nvidia/cu13/lib/libcublas.so.13)" "NCCL 2." "($SITE/nvidia/nccl/lib/libnccl.so.2)" \
  "0 device(s) visible (the CUDA driver found at $DRIVER_DIR/libcuda.so.1 is the CUDA" \
  "toolkit's stub library, not a real driver (cuInit: CUDA_ERROR_STUB_LIBRARY)"; do
  grep -qF "$want" <<<"$cuda" || fail "fobench --version lacks '$want':"$'\n'"$cuda"
done
ok "fobench --version: $cuda"

# --- fobench run --backend cuda: exit 2 within seconds, naming why, nothing written -----------
run_cuda() {  # run_cuda LABEL [mpirun...]: fobench run --backend cuda, which must exit 2
  local label=$1 start=$SECONDS rc=0
  shift
  in_root "$@" /bundle/bin/fobench run -c /bundle/configs/smoke.yaml --backend cuda \
    -o /out/stub.h5 >"$scratch/run.txt" 2>&1 || rc=$?
  local took=$((SECONDS - start))
  [[ $rc == 2 ]] || fail "$label: exit $rc, expected 2:"$'\n'"$(cat "$scratch/run.txt")"
  ((took <= 30)) || fail "$label took ${took}s"
  grep -q "is the CUDA toolkit's stub library, not a real driver" "$scratch/run.txt" ||
    fail "$label does not say why:"$'\n'"$(cat "$scratch/run.txt")"
  [[ ! -e "$R/out/stub.h5" ]] || fail "$label wrote /out/stub.h5"
  ok "$label: exit 2 in ${took}s: $(grep -m1 'error' "$scratch/run.txt")"
}
run_cuda "fobench run --backend cuda"
run_cuda "under mpirun" /bundle/bin/mpirun --allow-run-as-root -np 1

# --- run_checks.sh: under a minute, every step, one archive, the cause once -------------------
# Run as the bundle's README says to on a GPU machine (its first command), into /out/checks.
readme_cmd=$(awk '/^## Running/ { r = 1 } r && /^```/ { if (c) exit; c = 1; next } c { print }' \
  "$FOB_BUNDLE_DIR/README.md")
[[ $readme_cmd == *./run_checks.sh\ /tmp/fob-checks* ]] ||
  fail "the README's Running section does not start with the run_checks.sh command: $readme_cmd"
readme_cmd=${readme_cmd//\/tmp\/fob-checks/\/out\/checks}
start=$SECONDS
rc=0
in_root sh -c "cd /bundle && $readme_cmd" >"$scratch/checks.log" 2>&1 || rc=$?
took=$((SECONDS - start))
summary="$R/out/checks/summary.txt"
[[ $rc == 77 ]] || fail "run_checks.sh: exit $rc, expected 77:"$'\n'"$(cat "$scratch/checks.log")"
((took < 60)) || fail "run_checks.sh took ${took}s"
listing=$(cd "$R/out/checks" && find . -mindepth 1 -printf '%y %P\n' | LC_ALL=C sort)
[[ $listing == $'f checks.tgz\nf summary.txt' ]] || fail "OUTDIR holds:"$'\n'"$listing"
tar -xzf "$R/out/checks/checks.tgz" -C "$scratch" || fail "checks.tgz does not unpack"
check_recorded "$summary" 'ok|skipped' "$scratch/checks"
cause="the CUDA driver found at $DRIVER_DIR/libcuda.so.1 is the CUDA toolkit's stub library"
grep -qxF "no usable GPU: $cause, not a real driver (cuInit: CUDA_ERROR_STUB_LIBRARY): no GPU can be used" \
  "$summary" || fail "the summary does not name the cause:"$'\n'"$(cat "$summary")"
n=$(grep -ci 'stub' "$summary")
[[ $n == 1 ]] || fail "the summary names the stub $n times:"$'\n'"$(cat "$summary")"
grep -qE "^  libcupti\.so\.13 +$SITE/nvidia/cu13/lib/libcupti\.so\.13" "$summary" ||
  fail "the summary does not list CUPTI"
last=$(tail -n1 "$summary")
[[ $last =~ ^result:\ no\ usable\ GPU\ here:\ [0-9]+\ of\ $NSTEPS\ steps\ skipped,\ none\ failed$ ]] ||
  fail "last line: $last"
ok "run_checks.sh in ${took}s: exit 77, checks.tgz and summary.txt, $NSTEPS steps, the" \
  "cause once; the summary:"
sed 's/^/  | /' "$summary"

listing >"$scratch/after.txt"
diff "$scratch/before.txt" "$scratch/after.txt" >"$scratch/diff.txt" ||
  fail "the runs changed the root outside /out:"$'\n'"$(cat "$scratch/diff.txt")"
[[ -z "$(ls -A "$R/dev/shm")" ]] || fail "left in /dev/shm: $(ls -A "$R/dev/shm")"
ok "nothing written outside /out"

# --- another layout: a conda environment of another Python, the driver in lib ----------------
umount "$R$SITE" "$R$DRIVER_DIR"
ro_bind "$scratch/wheels" /opt/conda/envs/gpu/lib/python3.11/site-packages
place_driver /usr/local/nvidia/lib
in_root /bundle/bin/fob-libs >"$scratch/libs2.txt" 2>&1 ||
  fail "fob-libs, second layout:"$'\n'"$(cat "$scratch/libs2.txt")"
if ! grep -qE '^  libcuda\.so\.1 +/usr/local/nvidia/lib/libcuda\.so\.1 ' "$scratch/libs2.txt" ||
  ! grep -qE '^  libnccl\.so\.2 +/opt/conda/envs/gpu/lib/python3\.11/site-packages/nvidia/nccl/' \
    "$scratch/libs2.txt"; then
  fail "second layout:"$'\n'"$(cat "$scratch/libs2.txt")"
fi
ok "found in /opt/conda/envs/gpu (python3.11) with the driver in /usr/local/nvidia/lib"
