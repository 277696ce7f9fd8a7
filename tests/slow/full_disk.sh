#!/usr/bin/env bash
# A disk that fills up mid-run: exit 3 saying what was kept, and every case flushed before the
# failed write stays readable by report (each flush replaces the file whole, so a failed one
# cannot damage the last). A disk too full for the file's start is exit 2 before measuring.
# Needs a tiny tmpfs: mounted here when running as root, else skipped (exit 77) with the reason.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
disk="$scratch/disk"
mkdir -p "$disk"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=64k fobench-test "$disk" 2> /dev/null; then
  echo "SKIP: mounting a 64 KiB tmpfs needs root (and CAP_SYS_ADMIN in a container)"
  exit 77
fi
trap 'umount "$disk" 2> /dev/null; rm -rf "$scratch"' EXIT

rc=0
mpirun_np 2 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" \
  --strategies baseline,flash,decompose,slicing:2 -n 30 -o "$disk/r.h5" \
  > "$scratch/run.out" 2> "$scratch/run.err" || rc=$?
[ "$rc" = 3 ] || { cat "$scratch/run.err" >&2; fail "full disk: exit $rc, expected 3"; }
grep -q "not enough space.*case(s) flushed before are kept there" "$scratch/run.err" || {
  cat "$scratch/run.err" >&2
  fail "full disk: the message does not say what was kept"
}
n=$("$FOBENCH" report "$disk/r.h5.partial" --format csv | grep -v '^#' | tail -n +2 | wc -l)
[ "$n" -ge 1 ] || fail "the .partial file holds $n cases after the disk filled up"
echo "ok: disk full mid-run: exit 3, $n case(s) readable"

# Fill the disk so that not even the file's start fits.
umount "$disk"
mount -t tmpfs -o size=16k fobench-test "$disk"
dd if=/dev/zero of="$disk/filler" bs=1k count=12 status=none 2> /dev/null || true
rc=0
mpirun_np 1 run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" -o "$disk/s.h5" \
  > "$scratch/start.out" 2> "$scratch/start.err" || rc=$?
[ "$rc" = 2 ] || { cat "$scratch/start.err" >&2; fail "full disk at start: exit $rc, expected 2"; }
grep -q "nothing was measured" "$scratch/start.err" || fail "full disk at start: no reason given"
[ ! -e "$disk/s.h5.partial" ] || fail "full disk at start: a .partial was left"
echo "ok: disk full at start: exit 2 before measuring"
