#!/usr/bin/env bash
# The bundle copied to another path (with a space in it) and made read-only runs from there on
# this machine: 2 ranks of the cpu backend under its mpirun, verified, and a report, with HOME
# and TMPDIR pointed at fresh directories that must stay empty, and nothing new in /tmp or
# /dev/shm. As root it runs as nobody, so that read-only means read-only and no root is needed.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
require_bundle
TIMEOUT=300

runner=()
if [[ $(id -u) == 0 ]]; then
  command -v setpriv >/dev/null 2>&1 || skip "root, and no setpriv (util-linux) to drop to nobody"
  runner=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi

# The scratch directory exists before /tmp is looked at, and is left out of the comparison.
scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
chmod 755 "$scratch"
before=$(top_entries /tmp /dev/shm "${TMPDIR:-/tmp}" | grep -vxF "$scratch" || true)

copy="$scratch/elsewhere/my bundle"
mkdir -p "$scratch/elsewhere" "$scratch/home" "$scratch/tmp" "$scratch/out"
cp -a "$FOB_BUNDLE_DIR" "$copy"
chmod -R a-w "$copy"
chmod -R a+rX "$copy"
if [[ ${#runner[@]} -gt 0 ]]; then chown 65534:65534 "$scratch/home" "$scratch/tmp" "$scratch/out"; fi

touch "$scratch/stamp"

# run CMD...: CMD as the runner, in a clean environment with the fresh HOME and TMPDIR.
run() {
  (cd "$scratch/out" && timeout -k 10 "$TIMEOUT" "${runner[@]}" env -i PATH=/usr/bin:/bin \
    HOME="$scratch/home" TMPDIR="$scratch/tmp" LANG=C "$@")
}

run "$copy/bin/mpirun" --oversubscribe -np 2 "$copy/bin/fobench" run -c "$copy/configs/smoke.yaml" \
  --backend cpu --verify -o "$scratch/out/moved.h5" >"$scratch/run.log" 2>&1 ||
  { cat "$scratch/run.log" >&2; fail "the 2-rank run from the copy failed"; }
run "$copy/bin/fobench" report "$scratch/out/moved.h5" --format csv >"$scratch/report.csv" \
  2>"$scratch/report.err" || fail "report: $(cat "$scratch/report.err")"
check_verified_csv "$scratch/report.csv" || fail "a case was not verified"
ok "2 ranks from a read-only copy at '$copy', every case verified"

# Through a relative path, from another directory.
(cd "$scratch/elsewhere" && timeout -k 10 "$TIMEOUT" "${runner[@]}" env -i PATH=/usr/bin:/bin \
  HOME="$scratch/home" TMPDIR="$scratch/tmp" "./my bundle/bin/fobench" --version) \
  >"$scratch/version.txt" 2>/dev/null || fail "relative path: $(cat "$scratch/version.txt")"
ok "through a relative path: $(head -n1 "$scratch/version.txt")"

left=$(ls -A "$scratch/home" "$scratch/tmp")
[[ -z "$(ls -A "$scratch/home")" && -z "$(ls -A "$scratch/tmp")" ]] ||
  fail "HOME or TMPDIR not empty afterwards: $left"
new=$(new_entries "$before" /tmp /dev/shm "${TMPDIR:-/tmp}" | grep -vxF "$scratch" || true)
[[ -z "$new" ]] || fail "new in /tmp or /dev/shm: $new"
[[ -z "$(find "$copy" -newer "$scratch/stamp" -print -quit)" ]] || fail "the copy was written to"
ok "HOME and TMPDIR empty, nothing new in /tmp or /dev/shm"
